"""Recovery and the periodic sweep: batches a dead worker held go back to the queue, and the reaper
finalises complete jobs, re-sends or fails stuck batches, fails overdue jobs, re-scores under new
metric versions and computes again the system numbers kept under an older definition
(scoring.services.numbers). Each step returns its tally; the task that runs them
(submissions.tasks.reap, through submissions.sweep.submissions_sweep) settles the submissions between
the recovery and the re-scoring."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from plumbing import heartbeat
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


@contextmanager
def sweep_lock() -> Iterator[bool]:
    """Holds the sweep's advisory lock while the block runs; yields False (and holds nothing) while
    another sweep has it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [REAPER_LOCK])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [REAPER_LOCK])


def jobs_reap(*, now=None) -> dict[str, int]:
    """The periodic sweep: finalise complete jobs, re-send or fail batches stuck past their time
    limit, fail jobs that have run past the job limit, re-send undelivered queued batches
    (`jobs_recover`), then re-score under new metric versions (`results_refresh`). One item's error
    is logged, counted under "errors" and skips that item only. Returns the tally ({"skipped": 1}
    while another sweep runs). submissions.sweep runs the two steps with its settling between them."""
    with sweep_lock() as held:
        if not held:
            return {"skipped": 1}
        counts = jobs_recover(now=now)
        for key, value in results_refresh().items():
            counts[key] = counts.get(key, 0) + value
        return counts


T = TypeVar("T")


def _each(items: Iterable[T], action: Callable[[T], int], counts: dict[str, int], key: str) -> None:
    for item in items:
        try:
            counts[key] += action(item)
        except Exception:
            counts["errors"] += 1
            log.exception("reaper: %s failed for %s", key, item)


def _once(step: Callable[[], int], counts: dict[str, int], key: str) -> None:
    _each([step], lambda action: action(), counts, key)


def jobs_recover(*, now=None) -> dict[str, int]:
    """The sweep's first step (under `sweep_lock`): overdue jobs failed, complete ones finalised,
    stuck or orphaned batches sent again, undelivered ones re-sent."""
    now = now or timezone.now()
    counts = dict.fromkeys(("finalised", "requeued", "failed", "resent", "errors"), 0)
    open_jobs = EvaluationJob.objects.open()
    overdue = open_jobs.filter(queued_at__lt=now - timedelta(seconds=settings.CAPBENCH_JOB_TIME_LIMIT))
    _each(overdue, _fail_overdue, counts, "failed")
    _each(list(open_jobs.all()), _finalise, counts, "finalised")
    stuck = JobBatch.objects.filter(
        status=JobBatch.Status.RUNNING,
        job__in=open_jobs,
        started_at__lt=now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60),
    )
    _each(list(stuck), _unstick, counts, "requeued")
    # Held by a worker whose heartbeat stopped (killed, or its machine gone): another takes them now.
    running = JobBatch.objects.filter(
        status=JobBatch.Status.RUNNING,
        job__in=open_jobs,
        started_at__lt=now - timedelta(seconds=settings.CAPBENCH_WORKER_HEARTBEAT),
    ).exclude(pk__in=[batch.pk for batch in stuck])
    orphaned = [batch for batch in running if not heartbeat.alive(batch.holder)]
    _each(orphaned, _unstick, counts, "requeued")
    _each(_undelivered(open_jobs, now).items(), _resend, counts, "resent")
    return counts


def results_refresh() -> dict[str, int]:
    """The sweep's last step (under `sweep_lock`): re-scoring under new metric versions, then the
    numbers and correlations kept under an older definition, a slice per sweep."""
    counts = dict.fromkeys(("rescoring", "renumbered", "errors"), 0)
    _once(_rescore, counts, "rescoring")
    # Numbers kept under an older definition of a system's number (an upgrade): a slice per sweep.
    _once(lambda: len(system_numbers_refresh()), counts, "renumbered")
    # Correlations made under a protocol version no longer current: a few (dataset, metric) a sweep.
    _once(lambda: len(correlations_refresh_stale()), counts, "renumbered")
    return counts


def _fail_overdue(job: EvaluationJob) -> int:
    job_end(
        job_id=job.pk,
        status=EvaluationJob.Status.FAILED,
        error=f"stuck: not finished {settings.CAPBENCH_JOB_TIME_LIMIT // 60} minutes after it was queued "
        f"({job.done} of {job.total} captions scored)",
    )
    return 1


def _finalise(job: EvaluationJob) -> int:
    if JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).exists():
        return 0
    job_finalize(job_id=job.pk)
    return 1


def _unstick(batch: JobBatch) -> int:
    if batch.attempts >= settings.CAPBENCH_BATCH_ATTEMPTS:
        batch_attempt_failed(batch_id=batch.pk, error="stuck past the task time limit", final=True)
        return 1
    moved = JobBatch.objects.filter(pk=batch.pk, status=JobBatch.Status.RUNNING, started_at=batch.started_at).update(
        status=JobBatch.Status.QUEUED, error="stuck past the task time limit"
    )
    return batches_enqueue(job_id=batch.job_id, only_ids=[batch.pk]) if moved else 0


def _undelivered(open_jobs, now) -> dict[int, list[int]]:
    """Per open job, its queued batches never sent or sent too long ago (the broker lost them)."""
    resend_before = now - timedelta(seconds=settings.CAPBENCH_BATCH_RESEND_AFTER)
    batches = JobBatch.objects.filter(job__in=open_jobs, status=JobBatch.Status.QUEUED).filter(
        Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=resend_before)
    )
    undelivered: dict[int, list[int]] = {}
    for batch_id, job_id in batches.values_list("pk", "job_id"):
        undelivered.setdefault(job_id, []).append(batch_id)
    return undelivered


def _resend(job_batches: tuple[int, list[int]]) -> int:
    job_id, batch_ids = job_batches
    return batches_enqueue(job_id=job_id, only_ids=batch_ids)


def _rescore() -> int:
    """Record the registry's metrics first (a new version; a metric whose weights arrived becomes
    available), then plan the caption sets they leave unscored (planning.versions_rescore)."""
    metrics_sync()
    return len(versions_rescore())
