"""How jobs end: done, failed or unavailable (job_end), a batch's failed attempt and its retry
policy (batch_failure), and cancelling a system's open jobs. Finalising a complete job is in finalize.py, recovery and the periodic sweep in
reaper.py. A submission's status follows its jobs through scoring.events (submissions.signals)."""

from __future__ import annotations

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, transaction
from django.utils import timezone

from scoring.events import job_ended
from scoring.models import EvaluationJob, JobBatch


def job_end(*, job_id: int, status: str, error: str = "") -> None:
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().get(pk=job_id)
        if job.is_final:
            return
        job.status, job.error, job.finished_at = status, error, timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        if status != EvaluationJob.Status.DONE:
            JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).update(
                status=JobBatch.Status.FAILED, error=error[:2000]
            )
        transaction.on_commit(
            lambda: job_ended.send(sender=EvaluationJob, dataset_id=job.dataset_id, system_id=job.system_id)
        )


def batch_attempt_failed(*, batch_id: int, error: str, final: bool) -> None:
    """An attempt raised: back to the queue for a retry, or (last attempt) the job fails."""
    batch = JobBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return
    if final:
        job_end(
            job_id=batch.job_id,
            status=EvaluationJob.Status.FAILED,
            error=f"batch {batch.index + 1} failed after {batch.attempts} attempt(s): {error}",
        )
    else:  # the task's retry is on its way: queued again, as of now
        JobBatch.objects.filter(pk=batch_id, status=JobBatch.Status.RUNNING).update(
            status=JobBatch.Status.QUEUED, error=error[:2000], enqueued_at=timezone.now()
        )


# Capped: a longer wait than the broker's visibility timeout would bring a duplicate delivery.
MAX_RETRY_WAIT = 600
# Retries that count no attempt, while the database is out of reach: 1 + 2 + … seconds at least,
# at most MAX_RETRY_WAIT each. Past them the task gives up and the sweep sends the batch again
# (after the task time limit, its worker still beating: reaper.py).
OUTAGE_RETRIES = 12
# A server going away under its connections: admin_shutdown, crash_shutdown, cannot_connect_now.
_SERVER_GOING = ("57P01", "57P02", "57P03")


def connection_lost(error: BaseException) -> bool:
    """Whether `error` says the database is out of reach (a dropped or refused connection, a server
    stopping or starting), as against one it gave on a live connection (a deadlock, a statement
    timeout, a serialization failure), which a retry of the same statement would not cure."""
    if isinstance(error, InterfaceError):
        return True
    if not isinstance(error, OperationalError):
        return False
    sqlstate = getattr(error.__cause__, "sqlstate", None)  # psycopg's: None when no server answered
    return sqlstate is None or sqlstate.startswith("08") or sqlstate in _SERVER_GOING


def batch_failure(*, batch_id: int, error: Exception, retries: int) -> int | None:
    """A delivery of the batch raised `error` (its `retries`-th retry): the seconds until the task's
    retry, or None when it must not be retried (re-raise). The failure is counted (the batch is queued
    again, or on its last attempt its job fails); when the database is out of reach nothing can be
    counted, and the same delivery is retried, at most OUTAGE_RETRIES times, to take its batch back
    (batches._batch_claim) rather than leave it "running" until the task time limit."""
    if isinstance(error, OperationalError | InterfaceError):
        close_old_connections()  # a broken connection (a restarted server): the next query opens another
    backoff = settings.CAPBENCH_RETRY_BACKOFF * 2**retries
    try:
        attempts = JobBatch.objects.filter(pk=batch_id).values_list("attempts", flat=True).first()
        if attempts is None:  # gone with its job: nothing to retry
            return None
        final = attempts >= settings.CAPBENCH_BATCH_ATTEMPTS
        batch_attempt_failed(batch_id=batch_id, error=f"{type(error).__name__}: {error}", final=final)
    except (OperationalError, InterfaceError) as counting:
        if not connection_lost(counting):
            raise
        close_old_connections()
        return min(MAX_RETRY_WAIT, max(1, backoff)) if retries < OUTAGE_RETRIES else None
    return None if final else min(MAX_RETRY_WAIT, backoff)


def jobs_cancel(*, system_id: int, reason: str) -> int:
    """Fails the system's open jobs (a withdrawn submission's: submissions passes its system)."""
    open_jobs = EvaluationJob.objects.filter(system_id=system_id).open()
    ids = list(open_jobs.values_list("pk", flat=True))
    for job_id in ids:
        job_end(job_id=job_id, status=EvaluationJob.Status.FAILED, error=f"cancelled: {reason}")
    return len(ids)
