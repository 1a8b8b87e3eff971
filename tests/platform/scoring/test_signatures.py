"""A stored metric version's signature (scoring.signatures): the library's line for a version synced
now, a readable line for a researcher's uploaded scores and for a metric the code no longer has, and
the migration that records which library release computed the versions stored before it."""

from __future__ import annotations

import importlib
import json

import pytest
from django.apps import apps

from capbench_eval.metrics import get
from capbench_eval.signatures import signature
from capbench_eval.version import VERSION
from catalog.services.candidates import caption_keys
from scoring.models import Metric, MetricVersion
from scoring.services.metrics import metrics_sync
from scoring.signatures import version_signature, version_signatures
from tests.platform.factories import UserFactory
from workbench.services import MetricInfo, ScoresFile, metric_submit

pytestmark = pytest.mark.django_db

NGRAM = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l", "cider_d"]


@pytest.mark.parametrize("slug", NGRAM)
def test_a_version_synced_now_signs_as_the_library_does(slug):
    metrics_sync()
    version = Metric.objects.select_related("current_version__metric").get(slug=slug).current_version
    assert version_signature(version) == signature(get(slug))


def test_a_version_synced_now_records_the_library_release():
    metrics_sync()
    version = Metric.objects.select_related("current_version").get(slug="cider_d").current_version
    assert version.library_version == VERSION


def test_the_signature_reads_the_stored_configuration_and_release_not_todays():
    """An older version keeps its own line: the configuration and the release stored with it."""
    metrics_sync()
    cider = Metric.objects.get(slug="cider_d")
    older = MetricVersion.objects.create(
        metric=cider, version="1", config_hash="0" * 16, config={"n": 4, "sigma": 7.0}, library_version="0.0.9"
    )
    assert version_signature(older) == "cider_d|v:1|n:4|sigma:7.0|refs:all|df:scored-set|sys:mean|capbench-eval:0.0.9"


def test_a_version_without_a_recorded_release_says_so():
    metrics_sync()
    bleu = Metric.objects.get(slug="bleu_4")
    stray = MetricVersion.objects.create(metric=bleu, version="0", config_hash="1" * 16, config={})
    assert version_signature(stray).endswith("|sys:corpus|capbench-eval:unknown")


def test_a_metric_the_code_no_longer_has_signs_with_what_was_stored_of_it():
    gone = Metric.objects.create(
        slug="old_corpus_metric",
        name="Old",
        family="ngram",
        needs=["references"],
        aggregation="corpus",
        corpus_dependent=True,
        is_registered=False,
    )
    version = MetricVersion.objects.create(
        metric=gone, version="3", config_hash="2" * 16, config={"tokenizer": "ptb"}, library_version="0.1.0"
    )
    assert (
        version_signature(version)
        == "old_corpus_metric|v:3|tok:ptb|refs:all|df:scored-set|sys:corpus|capbench-eval:0.1.0"
    )


def test_uploaded_scores_sign_as_uploaded_with_their_files_digest(demo_dataset):
    scores = "\n".join(json.dumps({"caption_id": key, "score": 0.5}) for key in caption_keys(demo_dataset))
    upload = metric_submit(
        owner=UserFactory(),
        info=MetricInfo("Mine", reference_free=True),
        files=[ScoresFile(demo_dataset, "scores.jsonl", scores.encode())],
    )
    version = upload.metric_version
    assert version.library_version == ""  # no library computed it
    slug, digest = version.metric.slug, version.config_hash
    assert version_signature(version) == f"{slug}|v:1|uploaded|scores:{digest}|refs:none|sys:mean"


def test_signatures_of_many_versions_are_read_in_one_query(django_assert_num_queries):
    metrics_sync()
    ids = list(MetricVersion.objects.filter(metric__slug__in=NGRAM).values_list("pk", flat=True))
    with django_assert_num_queries(1):
        found = version_signatures(ids)
    assert found == {pk: version_signature(MetricVersion.objects.get(pk=pk)) for pk in ids}


def test_the_migration_marks_computed_versions_with_the_only_release_and_leaves_uploads_empty():
    migration = importlib.import_module("scoring.migrations.0015_metricversion_library_version")
    computed = Metric.objects.create(slug="computed_metric", name="Computed", family="ngram")
    uploaded = Metric.objects.create(slug="uploaded-metric-1a2b3c", name="Uploaded", family="submitted")
    before = MetricVersion.objects.create(metric=computed, version="1", config_hash="3" * 16, config={})
    upload = MetricVersion.objects.create(metric=uploaded, version="1", config_hash="4" * 16, config={"submitted": {}})
    migration.versions_marked(apps, None)
    before.refresh_from_db()
    upload.refresh_from_db()
    assert (before.library_version, upload.library_version) == (migration.LIBRARY_VERSION, "")
