"""Planning's order and batch sizes (docs/performance.md, bench/pipeline.py): the costliest metric's
jobs are sent first, and a metric with a batch size of its own (METEOR: one warm JVM for the whole
submission) is cut by it, the others by their queue's. A metric this server does not compute gets
no batch and nothing on a queue, and is planned by the sweep once it is available."""

import json

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from capbench_eval.metrics import MetricResult, get
from capbench_eval.metrics.base import Availability
from scoring.models import EvaluationJob, JobBatch, Metric, MetricVersion, Score
from scoring.services.lifecycle import job_end
from scoring.services.metrics import metrics_sync
from scoring.services.planning import longest_first, versions_rescore
from submissions.models import Submission
from tests.platform.scoring.inline import run_jobs, submit_planned

pytestmark = pytest.mark.django_db


def test_the_costliest_metric_is_sent_first_then_by_name():
    metrics_sync()
    versions = list(MetricVersion.objects.filter(metric__slug__in=["bleu_4", "meteor", "rouge_l", "cider_d"]))
    assert [v.metric.slug for v in longest_first(versions)] == ["meteor", "bleu_4", "cider_d", "rouge_l"]


@pytest.mark.django_db(transaction=True)
def test_a_metric_with_its_own_batch_size_is_cut_by_it(demo_dataset, captioner, settings):
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 40, "gpu": 40, "api": 40}
    submission = submit_planned(captioner, demo_dataset, metrics=["meteor", "bleu_4"])
    counts = {job.metric_version.metric.slug: job.batch_count for job in submission.system.evaluation_jobs.all()}
    assert counts == {"meteor": 1, "bleu_4": -(-submission.caption_count // 40)}


def _submission(owner, dataset, metrics):
    from catalog.models import Item
    from submissions.services import MethodInfo, submission_create, submission_plan

    entries = [
        {"image_id": item.external_id, "caption": item.references[0]} for item in Item.objects.filter(dataset=dataset)
    ]
    submission = submission_create(
        owner=owner,
        dataset=dataset,
        file_name="results.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Planned"),
        metrics=metrics,
    )
    submission_plan(submission_id=submission.pk)
    return submission


@pytest.mark.django_db(transaction=True)
def test_an_unavailable_metric_is_never_queued_and_the_sweep_plans_it_once_it_is_available(
    demo_dataset, captioner, monkeypatch
):
    submission = _submission(captioner, demo_dataset, ["test_missing_weights", "rouge_l"])
    jobs = {job.metric_version.metric.slug: job for job in submission.system.evaluation_jobs.all()}
    missing = jobs["test_missing_weights"]
    assert missing.status == "unavailable"
    assert missing.batch_count == 0
    assert missing.finished_at is not None
    assert missing.error == "unavailable: checkpoint test-model.pt is not in the model store"
    assert not JobBatch.objects.filter(job=missing).exists()  # nothing to send to a queue
    assert jobs["rouge_l"].batch_count == 1
    assert JobBatch.objects.filter(job=jobs["rouge_l"]).exists()
    run_jobs([jobs["rouge_l"]])
    assert Submission.objects.get(pk=submission.pk).status == "done"  # nothing left to wait for
    metrics_sync()
    assert versions_rescore() == []  # still unavailable: nothing planned, however often the sweep runs

    # The weights arrive: the sweep's metrics_sync marks the metric available, versions_rescore plans it.
    implementation = type(get("test_missing_weights"))
    monkeypatch.setattr(implementation, "availability", lambda self: Availability(True, ""))
    monkeypatch.setattr(implementation, "score", lambda self, rows, context=None: MetricResult([1.0] * len(rows), 1.0))
    metrics_sync()
    assert Metric.objects.get(slug="test_missing_weights").available
    [again] = versions_rescore()
    assert again.pk == missing.pk
    assert again.status == "queued"
    assert again.batch_count == 1
    assert again.error == ""
    run_jobs([again])
    assert EvaluationJob.objects.get(pk=missing.pk).status == "done"
    assert Score.objects.filter(metric_version=missing.metric_version, value=1.0).count() == 100

    # A worker that finds it unavailable after that (its copy of the weights gone) is not answered
    # by planning it again at every sweep: only a change metrics_sync sees does.
    EvaluationJob.objects.filter(pk=missing.pk).update(status="queued")
    job_end(job_id=missing.pk, status="unavailable", error="unavailable: gone")
    metrics_sync()
    assert versions_rescore() == []
