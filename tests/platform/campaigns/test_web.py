"""The annotation page: a signed-in annotator's answer is stored and the next task shown; answers
are limited per account (the 4th over a rate of 3 an hour is a 429 with Retry-After); a visitor is
sent to sign in."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from campaigns.models import Annotation
from catalog.models import Judgment

pytestmark = pytest.mark.django_db


def annotator_client(user) -> Client:
    client = Client(REMOTE_ADDR="192.0.2.44")
    client.force_login(user)
    return client


def shown_task(campaign, user) -> Annotation:
    return Annotation.objects.get(campaign=campaign, annotator=user, status=Annotation.Status.SHOWN)


def test_an_answer_through_the_page_is_stored_and_the_next_task_shown(make_campaign, make_user):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    ann = make_user("ann")
    client = annotator_client(ann)
    page = client.get(f"/campaigns/{campaign.slug}/annotate/")
    assert page.status_code == 200
    task = shown_task(campaign, ann)
    assert task.caption.text in page.content.decode()
    values = {"dim-accuracy": "5", "dim-completeness": "4", "dim-conciseness": "3", "dim-relevance": "2"}
    response = client.post(f"/campaigns/{campaign.slug}/annotate/", {"task": task.pk, **values})
    assert response.status_code == 302
    assert response["Location"] == f"/campaigns/{campaign.slug}/annotate/"
    stored = Judgment.collected.filter(source=campaign.source, caption=task.caption)
    assert dict(stored.values_list("dimension", "value")) == {
        "accuracy": 5.0,
        "completeness": 4.0,
        "conciseness": 3.0,
        "relevance": 2.0,
    }
    # a rating out of range is refused with a 400 and nothing stored
    client.get(f"/campaigns/{campaign.slug}/annotate/")
    second = shown_task(campaign, ann)
    assert second.pk != task.pk
    response = client.post(f"/campaigns/{campaign.slug}/annotate/", {"task": second.pk, **values, "dim-accuracy": "9"})
    assert response.status_code == 400
    assert not Judgment.collected.filter(caption=second.caption).exists()
    kept = response.content.decode()  # the choices made are kept for the second try
    assert re.search(r'name="dim-completeness" value="4" required checked', kept)
    assert not re.search(r'name="dim-accuracy" value="\d" required checked', kept)
    assert Client().get(f"/campaigns/{campaign.slug}/annotate/").status_code == 302  # a visitor signs in first


def test_the_fourth_answer_over_a_rate_of_three_an_hour_is_a_429(fresh_rate_limits, make_campaign, make_user, settings):
    settings.CAPBENCH_RATES["ratings"] = "3/hour"
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    ann = make_user("ann")
    client = annotator_client(ann)
    url = f"/campaigns/{campaign.slug}/annotate/"
    for _ in range(3):
        client.get(url)  # reading the page is not an answer
        task = shown_task(campaign, ann)
        response = client.post(url, {"task": task.pk, "skip": "1"})
        assert response.status_code == 302
    client.get(url)
    task = shown_task(campaign, ann)
    refused = client.post(url, {"task": task.pk, "skip": "1"})
    assert refused.status_code == 429
    assert 3000 < int(refused["Retry-After"]) <= 3600
    assert shown_task(campaign, ann).pk == task.pk  # not skipped
    assert client.get(url).status_code == 200
    # another annotator has answers of their own
    ned = make_user("ned")
    ned_client = annotator_client(ned)
    ned_client.get(url)
    assert ned_client.post(url, {"task": shown_task(campaign, ned).pk, "skip": "1"}).status_code == 302


def test_a_campaigns_page_answers_only_its_own_tasks(make_campaign, make_user):
    first, second = make_campaign("first", gold_rate=0), make_campaign("second", gold_rate=0)
    ann = make_user("ann")
    client = annotator_client(ann)
    client.get(f"/campaigns/{second.slug}/annotate/")
    other = shown_task(second, ann)
    values = {f"dim-{d['key']}": "3" for d in second.rubric}
    response = client.post(f"/campaigns/{first.slug}/annotate/", {"task": other.pk, **values})
    assert response.status_code == 400
    assert "no such task of yours" in response.content.decode()
    assert Annotation.objects.get(pk=other.pk).status == Annotation.Status.SHOWN
