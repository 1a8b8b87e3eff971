"""The throttled refresh: answers schedule one refresh of the campaign's results while its Valkey
key lives (one message on the real queue, however many answers), the next after the key is gone;
the refresh task and the sweep compute the results."""

from __future__ import annotations

import json

import pytest
import redis
from django.conf import settings

from campaigns.models import CampaignResults
from campaigns.services.refresh import REFRESH_TASK, _key, refresh_soon
from campaigns.services.results import campaigns_refresh_stale
from campaigns.tasks import refresh
from scoring.queues import queue_name
from tests.platform.campaigns.helpers import in_turns, noisy_rubric

pytestmark = pytest.mark.django_db


def refreshes_queued(campaign_id: int) -> list[dict]:
    """The refresh messages for the campaign waiting on this run's cpu queue (the real broker)."""
    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    found = []
    for raw in broker.lrange(queue_name("cpu"), 0, -1):
        headers = json.loads(raw)["headers"]
        if headers.get("task") == REFRESH_TASK and headers.get("argsrepr") == f"[{campaign_id}]":
            found.append(headers)
    return found


def test_refresh_soon_sends_one_refresh_while_its_key_lives(
    make_campaign, make_user, django_capture_on_commit_callbacks
):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(_key(campaign.pk))
    ann, ned = make_user("ann"), make_user("ned")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        refresh_soon(campaign)
        refresh_soon(campaign)
        in_turns(campaign, [ann, ned], noisy_rubric(campaign), rounds=3)  # six answers, each asking again
    assert len(callbacks) == 8  # every call asked; nothing ran before the commit
    assert len(refreshes_queued(campaign.pk)) == 1
    ttl = client.ttl(_key(campaign.pk))
    assert 0 < ttl <= settings.CAPBENCH_CAMPAIGN_REFRESH_SECONDS
    [message] = refreshes_queued(campaign.pk)
    assert message["eta"] is not None  # it waits, so later answers ride along
    assert not CampaignResults.objects.filter(campaign=campaign).exists()

    # once the key is gone (the wait is over) the next answer schedules the next refresh
    client.delete(_key(campaign.pk))
    with django_capture_on_commit_callbacks(execute=True):
        refresh_soon(campaign)
        refresh_soon(campaign)
    assert len(refreshes_queued(campaign.pk)) == 2

    # the task the message names computes the results; the sweep finds nothing newer than them
    refresh(campaign.pk)
    assert CampaignResults.objects.get(campaign=campaign).payload["answers"] == 6
    assert campaigns_refresh_stale() == 0


def test_the_sweep_refreshes_campaigns_with_answers_newer_than_their_results(make_campaign, make_user):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    idle = make_campaign("idle", ratings_wanted=2, gold_rate=0)
    in_turns(campaign, [make_user("ann")], noisy_rubric(campaign), rounds=2)
    assert campaigns_refresh_stale() == 1
    assert CampaignResults.objects.get(campaign=campaign).payload["answers"] == 2
    assert not CampaignResults.objects.filter(campaign=idle).exists()
    assert campaigns_refresh_stale() == 0


def test_the_sweep_redoes_a_refresh_wanted_after_the_results_even_without_new_answers(
    make_campaign, make_user, submitted
):
    from catalog.uploads.services import upload_visibility_set
    from submissions.services import SUBMISSIONS

    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    in_turns(campaign, [make_user("ann"), make_user("ned")], noisy_rubric(campaign), rounds=4)
    assert campaigns_refresh_stale() == 1
    assert campaigns_refresh_stale() == 0
    people = CampaignResults.objects.get(campaign=campaign).payload["people"]
    assert len(people) == 2
    # A withdrawal's or a visibility change's refresh that never ran (its message lost): no answer
    # is newer than the results, but the change is recorded, and the sweep does it.
    hidden = submitted[0]
    upload_visibility_set(upload=hidden, is_public=False, kind=SUBMISSIONS)
    assert campaigns_refresh_stale() == 1
    assert str(hidden.system_id) not in CampaignResults.objects.get(campaign=campaign).payload["people"]
    assert campaigns_refresh_stale() == 0


def test_a_refresh_not_sent_leaves_no_key_behind(make_campaign, monkeypatch, django_capture_on_commit_callbacks):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    monkeypatch.setattr("campaigns.services.refresh.enqueue", lambda *args, **kwargs: False)  # the broker away
    with django_capture_on_commit_callbacks(execute=True):
        refresh_soon(campaign)
    assert not redis.Redis.from_url(settings.REDIS_URL).exists(_key(campaign.pk))  # the next answer tries again
    campaign.refresh_from_db()
    assert campaign.refresh_wanted_at is not None  # and the sweep knows
