"""Throttled refresh of a campaign's results: the first answer after a refresh schedules one
CAPBENCH_CAMPAIGN_REFRESH_SECONDS later, and the answers in between ride along (not one refresh per
click). A key in Valkey marks the scheduled refresh; when the broker or Valkey cannot be reached the
periodic sweep (`campaigns.reap`) refreshes every campaign whose newest answer is newer than its
results, so nothing is lost."""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db import transaction

from campaigns.models import Campaign
from capbench import valkey
from scoring.queues import enqueue

log = logging.getLogger(__name__)
REFRESH_TASK = "campaigns.refresh"


def _key(campaign_id: int) -> str:
    return f"{settings.CAPBENCH_QUEUE_PREFIX}campaign-refresh:{campaign_id}"


def refresh_soon(campaign: Campaign) -> None:
    """Schedule the campaign's refresh after this transaction commits, unless one is scheduled."""
    delay = settings.CAPBENCH_CAMPAIGN_REFRESH_SECONDS

    def schedule() -> None:
        try:
            # The key lives as long as the wait: an answer after the refresh has started schedules the next.
            if not valkey.client().set(_key(campaign.pk), 1, nx=True, ex=max(1, delay)):
                return
        except redis.RedisError as error:
            log.warning("campaign %s: refresh not scheduled (Valkey: %s); the sweep will do it", campaign.pk, error)
            return
        enqueue(REFRESH_TASK, [campaign.pk], countdown=delay)

    transaction.on_commit(schedule)
