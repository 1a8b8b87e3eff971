"""Celery tasks: thin, taking primary keys and calling one service each. The submission tasks
(scoring.plan_submission, scoring.reap) are submissions.tasks: they settle submissions too."""

from __future__ import annotations

from celery import shared_task

from catalog.models import Dataset
from plumbing.logs import log_context
from scoring.services import batches, finalize, lifecycle, planning


@shared_task(name="scoring.plan_dataset")
def plan_dataset(dataset_id: int, slugs: list[str] | None = None) -> int:
    return len(planning.dataset_plan(dataset=Dataset.objects.get(pk=dataset_id), slugs=slugs))


@shared_task(name="scoring.run_batch", bind=True, max_retries=None)
def run_batch(self, batch_id: int) -> str:
    with log_context(batch_id=batch_id, task_id=self.request.id, worker=self.request.hostname):
        return _run_batch(self, batch_id)


def _run_batch(self, batch_id: int) -> str:
    try:
        outcome = batches.batch_run(batch_id=batch_id, worker=f"{self.request.hostname}/{self.request.id}")
    except Exception as error:
        countdown = lifecycle.batch_failure(batch_id=batch_id, error=error, retries=self.request.retries)
        if countdown is None:
            raise
        raise self.retry(exc=error, countdown=countdown) from error
    if outcome.job_complete:
        finalize.job_finalize(job_id=outcome.job_id or batches.job_of(batch_id))
    return outcome.state
