"""The engine end to end with real worker processes on the real Redis and PostgreSQL: an upload
scored to the end, a worker killed with SIGKILL mid-job, and a broker outage during an upload."""

from __future__ import annotations

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from capbench_eval.metrics import CaptionRow, get
from catalog.models import Caption, Item
from scoring.models import EvaluationJob, JobBatch, Score, SystemScore
from submissions.models import Submission
from submissions.services import submissions_dispatch_pending
from tests.platform.scoring.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def results_file(dataset, tmp_path: Path) -> Path:
    path = tmp_path / "captions.json"
    path.write_text(
        json.dumps(
            [
                {"image_id": item.external_id, "caption": item.references[2]}
                for item in Item.objects.filter(dataset=dataset)
            ]
        )
    )
    return path


def test_an_upload_is_scored_to_the_end_by_a_real_worker(workers, demo_dataset, captioner, tmp_path):
    workers.start("e2e")
    out = io.StringIO()
    call_command(
        "submit",
        "demo",
        str(results_file(demo_dataset, tmp_path)),
        "--user",
        "captioner",
        "--name",
        "Third reference",
        "--metric",
        "bleu_4",
        "--metric",
        "cider_d",
        "--metric",
        "meteor",
        "--metric",
        "test_missing_weights",
        stdout=out,
    )
    submission = Submission.objects.get()
    assert out.getvalue().startswith(f"submission {submission.pk}: 100 captions, queued")
    wait_until(lambda: Submission.objects.get().status == "done", 180, workers, "scoring the submission")
    jobs = {
        job.metric_version.metric.slug: job for job in EvaluationJob.objects.select_related("metric_version__metric")
    }
    assert {slug: job.status for slug, job in jobs.items()} == {
        "bleu_4": "done",
        "cider_d": "done",
        "meteor": "done",
        "test_missing_weights": "unavailable",
    }
    assert jobs["test_missing_weights"].error == "unavailable: checkpoint test-model.pt is not in the model store"
    captions = list(Caption.objects.filter(system=submission.system).select_related("item").order_by("id"))
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    for slug in ("bleu_4", "cider_d", "meteor"):
        whole = get(slug).score(rows)
        stored = dict(Score.objects.filter(metric_version=jobs[slug].metric_version).values_list("caption_id", "value"))
        assert [stored[c.pk] for c in captions] == pytest.approx(whole.scores, abs=1e-9)
        corpus = SystemScore.objects.get(system=submission.system, metric_version=jobs[slug].metric_version).value
        assert corpus == pytest.approx(whole.corpus, abs=1e-9)


def test_a_worker_killed_mid_job_loses_nothing_and_duplicates_nothing(
    workers, demo_dataset, captioner, tmp_path, settings
):
    first = workers.start("crash", CAPBENCH_TEST_PAUSE="0.4", CAPBENCH_BATCH_SIZE_CPU="10")
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 10, "gpu": 10, "api": 10}
    call_command(
        "submit",
        "demo",
        str(results_file(demo_dataset, tmp_path)),
        "--user",
        "captioner",
        "--name",
        "Crash test",
        "--metric",
        "test_words",
        "--metric",
        "rouge_l",
        stdout=io.StringIO(),
    )
    job = wait_until(
        lambda: EvaluationJob.objects.filter(metric_version__metric__slug="test_words").first(), 60, workers, "planning"
    )
    # Kill while a batch is inside the metric, with some batches already stored.
    wait_until(
        lambda: (
            JobBatch.objects.filter(job=job, status="done").count() >= 2
            and JobBatch.objects.filter(job=job, status="running").exists()
        ),
        120,
        workers,
        "a batch running",
    )
    workers.kill(first)
    job.refresh_from_db()
    held = list(JobBatch.objects.filter(job=job, status="running").values_list("index", flat=True))
    assert job.status == "running" and 0 < job.done < 100 and held, "the kill must land mid-job"
    scored_before = Score.objects.filter(metric_version=job.metric_version).count()
    assert scored_before == job.done  # what the dead worker stored is all there, nothing half-written

    workers.start("crash", CAPBENCH_TEST_PAUSE="0.05", CAPBENCH_BATCH_SIZE_CPU="10")  # same name: takes back
    wait_until(lambda: Submission.objects.get().status == "done", 180, workers, "finishing after the restart")
    for done_job in EvaluationJob.objects.all():
        assert done_job.status == "done"
        assert done_job.done == done_job.total == 100
        values = list(Score.objects.filter(metric_version=done_job.metric_version).values_list("caption_id", "value"))
        assert len(values) == len({caption for caption, _ in values}) == 100  # exactly one per caption
        assert all(value is not None for _, value in values)
    retried = JobBatch.objects.get(job=job, index=held[0])
    assert retried.attempts == 2
    assert retried.status == "done"
    words = dict(Score.objects.filter(metric_version=job.metric_version).values_list("caption__text", "value"))
    assert all(value == len(text.split()) for text, value in words.items())


def test_a_broker_outage_during_upload_keeps_the_submission_until_the_broker_is_back(
    workers, demo_dataset, captioner, tmp_path
):
    from capbench.celery import app

    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = "redis://127.0.0.1:1/0", None, None
    try:
        call_command(
            "submit",
            "demo",
            str(results_file(demo_dataset, tmp_path)),
            "--user",
            "captioner",
            "--name",
            "During an outage",
            "--metric",
            "rouge_l",
            stdout=io.StringIO(),
        )
    finally:
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved
    submission = Submission.objects.get()
    assert submission.status == "queued"
    assert submission.dispatched_at is None
    assert Caption.objects.filter(system=submission.system).count() == 100
    workers.start("outage")
    assert submissions_dispatch_pending(older_than=timedelta(0)) == 1  # what the periodic sweep does
    wait_until(lambda: Submission.objects.get().status == "done", 120, workers, "scoring after the outage")
    assert Score.objects.filter(caption__system=submission.system).count() == 100


def test_a_metric_that_keeps_raising_fails_its_job_after_bounded_retries(workers, demo_dataset, captioner, tmp_path):
    workers.start("retries")
    call_command(
        "submit",
        "demo",
        str(results_file(demo_dataset, tmp_path)),
        "--user",
        "captioner",
        "--name",
        "Broken metric",
        "--metric",
        "test_broken",
        "--metric",
        "rouge_l",
        stdout=io.StringIO(),
    )
    wait_until(lambda: Submission.objects.get().status in ("done", "failed"), 120, workers, "the submission ending")
    broken = EvaluationJob.objects.get(metric_version__metric__slug="test_broken")
    assert broken.status == "failed"
    assert broken.error == (
        f"batch 1 failed after {settings.CAPBENCH_BATCH_ATTEMPTS} attempt(s): RuntimeError: the model exploded"
    )
    assert JobBatch.objects.get(job=broken).attempts == settings.CAPBENCH_BATCH_ATTEMPTS
    assert EvaluationJob.objects.get(metric_version__metric__slug="rouge_l").status == "done"  # not blocked
    submission = Submission.objects.get()
    assert submission.status == "failed"
    assert submission.error.startswith("test_broken: batch 1 failed")
    assert not Score.objects.filter(metric_version=broken.metric_version).exists()
