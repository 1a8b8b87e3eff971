"""Celery tasks of live human evaluation: thin, taking primary keys and calling one service each."""

from __future__ import annotations

from celery import shared_task

from campaigns.services import results
from campaigns.services.refresh import REFRESH_TASK


@shared_task(name=REFRESH_TASK, bind=True, max_retries=3)
def refresh(self, campaign_id: int) -> None:
    try:
        results.campaign_refresh(campaign_id=campaign_id)
    except Exception as error:  # the sweep retries later whatever happens here
        raise self.retry(exc=error, countdown=5 * 2**self.request.retries) from error


@shared_task(name="campaigns.reap")
def reap() -> int:
    return results.campaigns_refresh_stale()
