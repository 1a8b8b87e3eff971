"""Celery tasks of submissions: thin, taking primary keys and calling one service each. Their names
stay those of the scoring queue they serve."""

from __future__ import annotations

from celery import shared_task

from submissions.services import submission_plan
from submissions.sweep import submissions_sweep


@shared_task(name="scoring.plan_submission", bind=True, max_retries=5)
def plan_submission(self, submission_id: int) -> int:
    try:
        return len(submission_plan(submission_id=submission_id))
    except Exception as error:
        raise self.retry(exc=error, countdown=2**self.request.retries) from error


@shared_task(name="scoring.reap")
def reap() -> dict:
    return submissions_sweep()
