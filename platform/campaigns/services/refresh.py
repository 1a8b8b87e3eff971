"""Throttled refresh of a campaign's results: the first answer after a refresh schedules one
CAPBENCH_CAMPAIGN_REFRESH_SECONDS later, and the answers in between ride along (not one refresh per
click). A key in Valkey marks the scheduled refresh; when the broker or Valkey cannot be reached the
periodic sweep (`campaigns.reap`) refreshes every campaign whose refresh was wanted
(`Campaign.refresh_wanted_at`) after its results' snapshot, so nothing is lost."""

from __future__ import annotations

import contextlib
import logging

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from campaigns.models import Campaign
from plumbing import valkey
from scoring.queues import enqueue

log = logging.getLogger(__name__)
REFRESH_TASK = "campaigns.refresh"


def _key(campaign_id: int) -> str:
    return f"{settings.CAPBENCH_QUEUE_PREFIX}campaign-refresh:{campaign_id}"


def refresh_soon(campaign: Campaign) -> None:
    """Mark the campaign's results as wanted again (in this transaction: the sweep's record), and
    schedule a refresh after it commits, unless one is scheduled."""
    delay = settings.CAPBENCH_CAMPAIGN_REFRESH_SECONDS
    Campaign.objects.filter(pk=campaign.pk).update(refresh_wanted_at=timezone.now())

    def schedule() -> None:
        try:
            # The key lives as long as the wait: an answer after the refresh has started schedules the next.
            if not valkey.client().set(_key(campaign.pk), 1, nx=True, ex=max(1, delay)):
                return
        except redis.RedisError as error:
            log.warning("campaign %s: refresh not scheduled (Valkey: %s); the sweep will do it", campaign.pk, error)
            return
        if not enqueue(REFRESH_TASK, [campaign.pk], countdown=delay):
            # Not sent: let the next answer try again (the sweep does it meanwhile).
            with contextlib.suppress(redis.RedisError):
                valkey.client().delete(_key(campaign.pk))

    transaction.on_commit(schedule)
