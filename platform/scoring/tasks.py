"""Celery tasks: thin, taking primary keys and calling one service each. The submission tasks
(scoring.plan_submission, scoring.reap) are submissions.tasks: they settle submissions too."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections

from capbench.logs import log_context
from catalog.models import Dataset
from scoring.services import batches, finalize, lifecycle, planning

MAX_RETRY_WAIT = 600


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
        if isinstance(error, OperationalError | InterfaceError):
            close_old_connections()  # a broken connection (a restarted server): the next query opens another
        try:
            final = batches.attempts_of(batch_id) >= settings.CAPBENCH_BATCH_ATTEMPTS
            lifecycle.batch_attempt_failed(batch_id=batch_id, error=f"{type(error).__name__}: {error}", final=final)
        except (OperationalError, InterfaceError):
            # The database is out of reach (restarting, failing over): nothing can be counted now. The
            # same delivery comes back and takes its batch over (batches._batch_claim); without this
            # retry the batch would stay "running" under a live worker until the task time limit.
            close_old_connections()
            countdown = min(MAX_RETRY_WAIT, max(1, settings.CAPBENCH_RETRY_BACKOFF * 2**self.request.retries))
            raise self.retry(exc=error, countdown=countdown) from error
        if final:
            raise
        # Capped: a longer wait than the broker's visibility timeout would bring a duplicate delivery.
        countdown = min(MAX_RETRY_WAIT, settings.CAPBENCH_RETRY_BACKOFF * 2**self.request.retries)
        raise self.retry(exc=error, countdown=countdown) from error
    if outcome.job_complete:
        finalize.job_finalize(job_id=outcome.job_id or batches.job_of(batch_id))
    return outcome.state
