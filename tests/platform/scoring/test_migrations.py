"""Migrating a database that holds rows, with the historical models of each state: 0006 fills the
protocol name and version columns from the key stored before it (and going back empties them); 0007
drops EvaluationJob.submission, which the job's system already named (going back fills it again)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scoring", "0005_metric_notes")]
AFTER = [("scoring", "0006_protocol_name_version")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def _back_to(target):
    """The database at `target`, latest state restored afterwards whatever the test did."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    yield _migrate(target)
    _migrate(latest)


@pytest.fixture
def migrated_back():
    yield from _back_to(BEFORE)


def _old_rows(apps) -> dict[str, list[int]]:
    Dataset = apps.get_model("catalog", "Dataset")
    Metric = apps.get_model("scoring", "Metric")
    MetricVersion = apps.get_model("scoring", "MetricVersion")
    CorrelationResult = apps.get_model("scoring", "CorrelationResult")
    SignificanceResult = apps.get_model("scoring", "SignificanceResult")
    dataset = Dataset.objects.create(slug="migrating", title="Migrating", source_format="flickr8k_expert")
    metric = Metric.objects.create(slug="migrating_metric", name="Migrating", family="ngram")
    version = MetricVersion.objects.create(metric=metric, version="1", config_hash="0" * 16, config={})
    keys = ["flickr8k-expert/paper@1", "flickr8k-expert/canonical@2", "a/b/paper@10", "no-protocol-shape"]
    correlations = [
        CorrelationResult.objects.create(
            metric_version=version,
            dataset=dataset,
            dimension="expert",
            statistic="tau_c",
            level="caption",
            protocol=key,
            value=0.3,
            n=10,
        ).pk
        for key in keys
    ]
    significance = [
        SignificanceResult.objects.create(
            dataset=dataset,
            protocol=key,
            level="caption",
            dimension="expert",
            statistic="tau_c",
            metrics=["migrating_metric"],
            values=[0.3],
            p_values=[[None]],
            ranks=[1],
        ).pk
        for key in keys
    ]
    return {"CorrelationResult": correlations, "SignificanceResult": significance}


EXPECTED = [("paper", "1"), ("canonical", "2"), ("paper", "10"), ("", "")]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_0006_fills_protocol_name_and_version_from_existing_rows_and_back(migrated_back):
    created = _old_rows(migrated_back)
    assert "protocol_name" not in {f.name for f in migrated_back.get_model("scoring", "CorrelationResult")._meta.fields}

    forward = _migrate(AFTER)
    for model_name, pks in created.items():
        model = forward.get_model("scoring", model_name)
        found = dict(model.objects.filter(pk__in=pks).values_list("pk", "protocol_name"))
        versions = dict(model.objects.filter(pk__in=pks).values_list("pk", "protocol_version"))
        assert [(found[pk], versions[pk]) for pk in pks] == EXPECTED, model_name
        assert model.objects.filter(pk__in=pks, protocol_name="paper", level="caption").count() == 2

    backward = _migrate(BEFORE)
    model = backward.get_model("scoring", "CorrelationResult")
    assert sorted(
        model.objects.filter(pk__in=created["CorrelationResult"]).values_list("protocol", flat=True)
    ) == sorted(["flickr8k-expert/paper@1", "flickr8k-expert/canonical@2", "a/b/paper@10", "no-protocol-shape"])
    with connection.cursor() as cursor:
        columns = [c.name for c in connection.introspection.get_table_description(cursor, model._meta.db_table)]
    assert "protocol_name" not in columns
    assert "protocol_version" not in columns


@pytest.mark.django_db
def test_rows_saved_with_only_the_key_get_the_columns():
    from catalog.models import Dataset
    from scoring.models import SignificanceResult, protocol_parts

    assert protocol_parts("flickr8k-expert/paper@1") == ("paper", "1")
    assert protocol_parts("x") == ("", "")
    dataset = Dataset.objects.create(slug="saving", title="Saving", source_format="flickr8k_expert")
    row = SignificanceResult.objects.create(
        dataset=dataset,
        protocol="saving/canonical@3",
        dimension="d",
        statistic="tau_c",
        metrics=[],
        values=[],
        p_values=[],
        ranks=[],
    )
    row.refresh_from_db()
    assert (row.protocol_name, row.protocol_version) == ("canonical", "3")


WITH_SUBMISSION_FIELD = [("scoring", "0006_protocol_name_version")]
WITHOUT_SUBMISSION_FIELD = [("scoring", "0007_remove_evaluationjob_submission")]


@pytest.fixture
def migrated_back_to_0006():
    yield from _back_to(WITH_SUBMISSION_FIELD)


def _columns(table: str) -> list[str]:
    with connection.cursor() as cursor:
        return [c.name for c in connection.introspection.get_table_description(cursor, table)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_0007_drops_the_job_submission_and_the_system_still_leads_to_it_and_back(migrated_back_to_0006):
    apps = migrated_back_to_0006
    User = apps.get_model("auth", "User")
    Dataset = apps.get_model("catalog", "Dataset")
    System = apps.get_model("catalog", "System")
    Submission = apps.get_model("submissions", "Submission")
    Metric = apps.get_model("scoring", "Metric")
    MetricVersion = apps.get_model("scoring", "MetricVersion")
    EvaluationJob = apps.get_model("scoring", "EvaluationJob")
    JobBatch = apps.get_model("scoring", "JobBatch")
    owner = User.objects.create(username="migrating-owner")
    dataset = Dataset.objects.create(slug="migrating-jobs", title="Migrating", source_format="flickr8k_expert")
    submitted = System.objects.create(dataset=dataset, slug="submitted", name="Submitted", kind="submission")
    submission = Submission.objects.create(
        owner=owner,
        dataset=dataset,
        system=submitted,
        method_name="Submitted",
        file_name="results.json",
        file_format="json",
        file_sha256="0" * 64,
        file_size=10,
        stored_file="submissions/results.json",
        caption_count=100,
        status="done",
    )
    metric = Metric.objects.create(slug="migrating_jobs_metric", name="Migrating", family="ngram")
    version = MetricVersion.objects.create(metric=metric, version="1", config_hash="1" * 16, config={})
    submitted_job = EvaluationJob.objects.create(
        purpose="submission",
        dataset=dataset,
        system=submitted,
        submission=submission,
        metric_version=version,
        status="done",
        total=100,
        done=100,
        reused=7,
        batch_count=1,
    )
    JobBatch.objects.create(job=submitted_job, index=0, caption_ids=[1, 2, 3], status="done")
    dataset_job = EvaluationJob.objects.create(
        purpose="dataset", dataset=dataset, system=None, submission=None, metric_version=version, status="queued"
    )
    assert "submission_id" in _columns(EvaluationJob._meta.db_table)

    forward = _migrate(WITHOUT_SUBMISSION_FIELD)
    Job = forward.get_model("scoring", "EvaluationJob")
    assert "submission" not in {f.name for f in Job._meta.get_fields()}
    assert "submission_id" not in _columns(Job._meta.db_table)
    job = Job.objects.select_related("system__submission").get(pk=submitted_job.pk)
    assert job.system.submission.pk == submission.pk  # the link, derived through the system
    assert (job.status, job.total, job.done, job.reused, job.batch_count) == ("done", 100, 100, 7, 1)
    assert list(Job.objects.filter(system__submission__status="done").values_list("pk", flat=True)) == [job.pk]
    assert forward.get_model("scoring", "JobBatch").objects.filter(job_id=job.pk).count() == 1
    assert Job.objects.get(pk=dataset_job.pk).system_id is None
    assert forward.get_model("submissions", "Submission").objects.filter(pk=submission.pk, status="done").exists()

    backward = _migrate(WITH_SUBMISSION_FIELD)
    Job = backward.get_model("scoring", "EvaluationJob")
    assert dict(Job.objects.filter(pk__in=[submitted_job.pk, dataset_job.pk]).values_list("pk", "submission_id")) == {
        submitted_job.pk: submission.pk,
        dataset_job.pk: None,
    }


@pytest.fixture
def migrated_back_to_0013():
    yield from _back_to([("scoring", "0013_score_version_index")])


@pytest.mark.django_db(transaction=True)
def test_0014_keeps_the_mean_column_for_the_previous_release_and_marks_numbers_to_compute_again(
    migrated_back_to_0013,
):
    """A number stored by the previous release (with its `mean`) is kept, marked to be computed
    again by the sweep (definition 0); the column stays, so that release's processes can still
    write during a rolling deploy; BLEU and METEOR are corpus metrics before the first sync."""
    apps = migrated_back_to_0013
    Dataset, System = apps.get_model("catalog", "Dataset"), apps.get_model("catalog", "System")
    Metric, MetricVersion = apps.get_model("scoring", "Metric"), apps.get_model("scoring", "MetricVersion")
    dataset = Dataset.objects.create(slug="upgrading", title="Upgrading", source_format="canonical")
    system = System.objects.create(dataset=dataset, slug="s", name="S", kind="model")
    bleu = Metric.objects.create(slug="bleu_4", name="BLEU-4", family="ngram")
    rouge = Metric.objects.create(slug="rouge_l", name="ROUGE-L", family="ngram")
    version = MetricVersion.objects.create(metric=bleu, version="1", config_hash="1" * 16, config={})
    old = apps.get_model("scoring", "SystemScore").objects.create(
        system=system, metric_version=version, value=0.2, mean=0.15, count=10
    )
    forward = _migrate([("scoring", "0014_system_numbers")])
    kept = forward.get_model("scoring", "SystemScore").objects.get(pk=old.pk)
    assert (kept.value, kept.definition, kept.images) == (0.2, 0, 0)
    assert "mean" in _columns("scoring_systemscore")  # still there for the previous release's writes
    with connection.cursor() as cursor:  # which inserts rows as it did (with `mean`, without the new columns)
        cursor.execute(
            "INSERT INTO scoring_systemscore (system_id, metric_version_id, value, mean, count, failed, computed_at) "
            "SELECT %s, %s, 0.3, 0.3, 5, 0, now()",
            [system.pk, MetricVersion.objects.create(metric=rouge, version="1", config_hash="2" * 16, config={}).pk],
        )
    aggregation = dict(forward.get_model("scoring", "Metric").objects.values_list("slug", "aggregation"))
    assert aggregation == {"bleu_4": "corpus", "rouge_l": "mean"}
