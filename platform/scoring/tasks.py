"""Celery tasks: thin, taking primary keys and calling one service each."""
from __future__ import annotations

from celery import shared_task
from django.conf import settings

from scoring.services import batches, lifecycle, planning
from submissions.services import submissions_dispatch_pending

MAX_RETRY_WAIT = 600


@shared_task(name="scoring.plan_submission", bind=True, max_retries=5)
def plan_submission(self, submission_id: int) -> int:
    try:
        return len(planning.submission_plan(submission_id=submission_id))
    except Exception as error:
        raise self.retry(exc=error, countdown=2 ** self.request.retries) from error


@shared_task(name="scoring.plan_dataset")
def plan_dataset(dataset_id: int, slugs: list[str] | None = None) -> int:
    from catalog.models import Dataset

    return len(planning.dataset_plan(dataset=Dataset.objects.get(pk=dataset_id), slugs=slugs))


@shared_task(name="scoring.run_batch", bind=True, max_retries=None)
def run_batch(self, batch_id: int) -> str:
    try:
        outcome = batches.batch_run(batch_id=batch_id, worker=f"{self.request.hostname}/{self.request.id}")
    except Exception as error:
        final = batches.attempts_of(batch_id) >= settings.CAPBENCH_BATCH_ATTEMPTS
        lifecycle.batch_attempt_failed(batch_id=batch_id, error=f"{type(error).__name__}: {error}", final=final)
        if final:
            raise
        # Capped: a longer wait than the broker's visibility timeout would bring a duplicate delivery.
        countdown = min(MAX_RETRY_WAIT, settings.CAPBENCH_RETRY_BACKOFF * 2 ** self.request.retries)
        raise self.retry(exc=error, countdown=countdown) from error
    if outcome.job_complete:
        lifecycle.job_finalize(job_id=batches.job_of(batch_id))
    return outcome.state


@shared_task(name="scoring.reap")
def reap() -> dict:
    counts = lifecycle.jobs_reap()
    counts["dispatched"] = submissions_dispatch_pending()
    return counts
