"""Celery tasks of live human evaluation: thin, taking primary keys and calling one service each."""

from __future__ import annotations

from celery import shared_task

from campaigns.services import results
from campaigns.services.refresh import REFRESH_TASK


@shared_task(name=REFRESH_TASK)
def refresh(campaign_id: int) -> None:
    results.campaign_refresh(campaign_id=campaign_id)


@shared_task(name="campaigns.reap")
def reap() -> int:
    return results.campaigns_refresh_stale()
