"""Planning's order and batch sizes (docs/performance.md, bench/pipeline.py): the costliest metric's
jobs are sent first, and a metric with a batch size of its own (METEOR: one warm JVM for the whole
submission) is cut by it, the others by their queue's."""

import pytest

from scoring.models import MetricVersion
from scoring.services.metrics import metrics_sync
from scoring.services.planning import longest_first
from tests.platform.scoring.test_pipeline import submit

pytestmark = pytest.mark.django_db


def test_the_costliest_metric_is_sent_first_then_by_name():
    metrics_sync()
    versions = list(MetricVersion.objects.filter(metric__slug__in=["bleu_4", "meteor", "rouge_l", "cider_d"]))
    assert [v.metric.slug for v in longest_first(versions)] == ["meteor", "bleu_4", "cider_d", "rouge_l"]


@pytest.mark.django_db(transaction=True)
def test_a_metric_with_its_own_batch_size_is_cut_by_it(demo_dataset, captioner, settings):
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 40, "gpu": 40, "api": 40}
    submission = submit(captioner, demo_dataset, ["meteor", "bleu_4"])
    counts = {job.metric_version.metric.slug: job.batch_count for job in submission.system.evaluation_jobs.all()}
    assert counts == {"meteor": 1, "bleu_4": -(-submission.caption_count // 40)}
