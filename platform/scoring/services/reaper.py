"""Recovery and the periodic sweep: batches a dead worker held go back to the queue, and the reaper
finalises complete jobs, re-sends or fails stuck batches, fails overdue jobs, lets submissions settle
(scoring.events.jobs_swept), re-scores under new metric versions and computes again the system
numbers kept under an older definition (scoring.services.numbers)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from plumbing import heartbeat
from scoring.events import jobs_swept
from scoring.models import EvaluationJob, JobBatch
from scoring.services.correlations import correlations_refresh_stale
from scoring.services.finalize import job_finalize
from scoring.services.lifecycle import batch_attempt_failed, job_end
from scoring.services.metrics import metrics_sync
from scoring.services.numbers import system_numbers_refresh
from scoring.services.planning import batches_enqueue, versions_rescore

log = logging.getLogger(__name__)


def batches_recover_worker(*, worker: str) -> int:
    """A worker starting under `worker`'s name: whatever that name held is from a dead process."""
    orphaned = JobBatch.objects.filter(worker__startswith=f"{worker}/", status=JobBatch.Status.RUNNING)
    jobs = set(orphaned.values_list("job_id", flat=True))
    ids = list(orphaned.values_list("pk", flat=True))
    orphaned.update(status=JobBatch.Status.QUEUED, error=f"recovered: worker {worker} restarted")
    for job_id in jobs:
        batches_enqueue(job_id=job_id, only_ids=ids)
    if ids:
        log.warning("re-queued %d batch(es) that %s held when it stopped", len(ids), worker)
    return len(ids)


REAPER_LOCK = 7_240_001  # a Postgres advisory lock: one sweep at a time across all workers


def jobs_reap(*, now=None) -> dict[str, int]:
    """The periodic sweep: finalise complete jobs, re-send or fail batches stuck past their time
    limit, fail jobs that have run past the job limit, re-send undelivered queued batches, settle
    submissions whose jobs are all over, and re-score under new metric versions. One item's error
    is logged and skips that item only."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [REAPER_LOCK])
        if not cursor.fetchone()[0]:
            return {"skipped": 1}
    try:
        return _sweep(now or timezone.now())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [REAPER_LOCK])


def _each(items, action, counts: dict, key: str) -> None:
    for item in items:
        try:
            counts[key] += action(item) or 0
        except Exception:
            counts["errors"] += 1
            log.exception("reaper: %s failed for %s", key, item)


def _sweep(now) -> dict[str, int]:
    counts = dict.fromkeys(
        ("finalised", "requeued", "failed", "resent", "settled", "rescoring", "renumbered", "errors"), 0
    )
    open_jobs = EvaluationJob.objects.open()
    limit = settings.CAPBENCH_JOB_TIME_LIMIT

    def fail_overdue(job: EvaluationJob) -> int:
        job_end(
            job_id=job.pk,
            status=EvaluationJob.Status.FAILED,
            error=f"stuck: not finished {limit // 60} minutes after it was queued "
            f"({job.done} of {job.total} captions scored)",
        )
        return 1

    def finalise(job: EvaluationJob) -> int:
        if JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).exists():
            return 0
        job_finalize(job_id=job.pk)
        return 1

    def unstick(batch: JobBatch) -> int:
        if batch.attempts >= settings.CAPBENCH_BATCH_ATTEMPTS:
            batch_attempt_failed(batch_id=batch.pk, error="stuck past the task time limit", final=True)
            return 1
        moved = JobBatch.objects.filter(
            pk=batch.pk, status=JobBatch.Status.RUNNING, started_at=batch.started_at
        ).update(status=JobBatch.Status.QUEUED, error="stuck past the task time limit")
        return batches_enqueue(job_id=batch.job_id, only_ids=[batch.pk]) if moved else 0

    def resend(job_id: int) -> int:
        stale = undelivered.filter(job_id=job_id).values_list("pk", flat=True)
        return batches_enqueue(job_id=job_id, only_ids=list(stale))

    _each(open_jobs.filter(queued_at__lt=now - timedelta(seconds=limit)), fail_overdue, counts, "failed")
    _each(list(open_jobs.all()), finalise, counts, "finalised")
    stuck = JobBatch.objects.filter(
        status=JobBatch.Status.RUNNING,
        job__in=open_jobs,
        started_at__lt=now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60),
    )
    _each(list(stuck), unstick, counts, "requeued")
    # Held by a worker whose heartbeat stopped (killed, or its machine gone): another takes them now.
    running = JobBatch.objects.filter(
        status=JobBatch.Status.RUNNING,
        job__in=open_jobs,
        started_at__lt=now - timedelta(seconds=settings.CAPBENCH_WORKER_HEARTBEAT),
    ).exclude(pk__in=[batch.pk for batch in stuck])
    orphaned = [batch for batch in running if not heartbeat.alive(batch.holder)]
    _each(orphaned, unstick, counts, "requeued")
    undelivered = JobBatch.objects.filter(job__in=open_jobs, status=JobBatch.Status.QUEUED).filter(
        Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - timedelta(seconds=settings.CAPBENCH_BATCH_RESEND_AFTER))
    )
    _each(set(undelivered.values_list("job_id", flat=True)), resend, counts, "resent")
    # Submissions settle theirs here ("settled"): submissions.signals.settle_submissions.
    jobs_swept.send(
        sender=EvaluationJob, counts=counts, each=lambda items, action, key: _each(items, action, counts, key)
    )
    _each([None], lambda _: metrics_sync() and 0, counts, "rescoring")
    _each([None], lambda _: len(versions_rescore()), counts, "rescoring")
    # Numbers kept under an older definition of a system's number (an upgrade): a slice per sweep.
    _each([None], lambda _: len(system_numbers_refresh()), counts, "renumbered")
    # Correlations made under a protocol version no longer current: a few (dataset, metric) a sweep.
    _each([None], lambda _: len(correlations_refresh_stale()), counts, "renumbered")
    return counts
