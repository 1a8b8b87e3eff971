"""How jobs end: done, failed or unavailable (job_end), a batch's failed attempt, and cancelling a
system's open jobs. Finalising a complete job is in finalize.py, recovery and the periodic sweep in
reaper.py. A submission's status follows its jobs through scoring.events (submissions.signals)."""

from __future__ import annotations

from django.db import transaction
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


def jobs_cancel(*, system_id: int, reason: str) -> int:
    """Fails the system's open jobs (a withdrawn submission's: submissions passes its system)."""
    open_jobs = EvaluationJob.objects.filter(system_id=system_id).open()
    ids = list(open_jobs.values_list("pk", flat=True))
    for job_id in ids:
        job_end(job_id=job_id, status=EvaluationJob.Status.FAILED, error=f"cancelled: {reason}")
    return len(ids)
