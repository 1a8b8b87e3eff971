"""What each annotator can be given, and why the rest is left out: the counts per reason (their
own or a linked account's systems, images without a picture, systems no longer public) agree with
what assignment gives; the organiser (staff, the campaign's creator) reads them per account on the
campaign's page, nobody else does; and an annotator who can be given nothing is told why on the
annotation page (every system theirs or a linked account's; an arena left with one system) rather
than that nothing is left."""

from __future__ import annotations

import pytest
from django.test import Client

from campaigns.models import Campaign
from campaigns.services.assignment import task_next
from campaigns.services.identity import address_seen
from campaigns.services.reach import HIDDEN, LINKED, NO_PICTURE, Exclusion, annotator_reach, campaign_reach
from catalog.models import Item, Media
from catalog.uploads.services import upload_withdraw
from submissions.services import SUBMISSIONS

pytestmark = pytest.mark.django_db
HOME = "203.0.113.7"


def linked(*users) -> None:
    """The accounts seen at one address: taken for one person."""
    for user in users:
        address_seen(user_id=user.pk, address=HOME)


def test_an_owner_can_be_given_the_other_system_only_and_is_told_so(make_campaign, owners, make_user):
    ada, _ = owners
    campaign = make_campaign(gold_rate=0)
    reach = annotator_reach(campaign, ada.pk)
    assert (reach.systems, reach.captions, reach.nothing) == (1, 100, "")
    assert reach.exclusions == (Exclusion(LINKED, 1, 100),)
    anyone = annotator_reach(campaign, make_user("cal").pk)
    assert (anyone.systems, anyone.captions, anyone.exclusions) == (2, 200, ())


def test_every_reason_is_counted_once_in_order(make_campaign, make_user, owners, submitted, demo_pictures):
    ada, _ = owners
    campaign = make_campaign(gold_rate=0)
    kept = list(Item.objects.filter(dataset=demo_pictures).order_by("id")[:90])
    Media.objects.filter(dataset=demo_pictures).exclude(items__in=kept).update(stored_path="")
    assert annotator_reach(campaign, make_user("cal").pk).exclusions == (Exclusion(NO_PICTURE, 0, 20),)
    upload_withdraw(upload=submitted[1], kind=SUBMISSIONS)  # Bob's system leaves: hidden before anything else
    reach = annotator_reach(campaign, ada.pk)
    assert reach.exclusions == (Exclusion(HIDDEN, 1, 100), Exclusion(LINKED, 1, 100))
    assert (reach.systems, reach.captions) == (0, 0)
    assert reach.why_nothing == "theirs"  # of the systems still public, every one is hers
    assert task_next(campaign=campaign, annotator=ada) is None  # what assignment gives agrees


def test_an_account_linked_to_every_owner_can_be_given_nothing_and_reads_why(make_campaign, make_user, owners):
    ada, bob = owners
    pip = make_user("pip")
    linked(ada, bob, pip)
    arena = make_campaign("duel", mode=Campaign.Mode.ARENA, gold_rate=0)
    reach = annotator_reach(arena, pip.pk)
    assert (reach.systems, reach.captions, reach.exclusions) == (0, 0, (Exclusion(LINKED, 2, 200),))
    assert reach.nothing.startswith("every system in this campaign belongs to you or an account linked to yours")
    assert task_next(campaign=arena, annotator=pip) is None
    client = Client(REMOTE_ADDR=HOME)
    client.force_login(pip)
    page = client.get(f"/campaigns/{arena.slug}/annotate/").content.decode()
    assert 'id="nothing-why"' in page
    assert "every system in this campaign belongs to you or an account linked to yours" in page
    assert "Nothing is left for you" not in page
    assert "You answered 0" not in page


def test_an_arena_with_one_system_left_to_an_owner_says_an_arena_needs_two(make_campaign, owners):
    ada, _ = owners
    arena = make_campaign("duel", mode=Campaign.Mode.ARENA, gold_rate=0)
    reach = annotator_reach(arena, ada.pk)
    assert (reach.systems, reach.why_nothing) == (1, "arena")
    assert reach.nothing.startswith("an arena compares two systems' captions of one image")
    assert task_next(campaign=arena, annotator=ada) is None


def test_the_organiser_reads_each_accounts_reach(make_campaign, make_user, owners):
    ada, bob = owners
    pip = make_user("pip")
    linked(ada, pip)  # Pip shares Ada's address
    campaign = make_campaign(mode=Campaign.Mode.ARENA, gold_rate=0)
    reach = campaign_reach(campaign)
    assert (reach.systems, reach.captions, reach.more) == (2, 200, 0)
    assert reach.anyone is not None and reach.anyone.captions == 200
    rows = dict(reach.accounts)
    assert set(rows) == {"ada", "bob", "pip"}  # the owners and the account linked to one
    assert rows["pip"].exclusions == (Exclusion(LINKED, 1, 100),)
    assert rows["pip"].why_nothing == "arena"
    invited = make_campaign("invited", audience=Campaign.Audience.INVITED, annotators=[pip], gold_rate=0)
    only = campaign_reach(invited)
    assert only.anyone is None
    assert [name for name, _ in only.accounts] == ["pip"]


def test_the_campaign_page_shows_the_reach_to_the_organiser_only(make_campaign, make_user, owners, staff):
    ada, bob = owners
    linked(ada, bob)
    campaign = make_campaign(mode=Campaign.Mode.ARENA, gold_rate=0)
    client = Client()
    client.force_login(staff)
    page = client.get(f"/campaigns/{campaign.slug}/").content.decode()
    assert 'id="reach"' in page
    assert "Nothing can be given: every system is theirs or a linked account&#x27;s." in page
    assert "200 captions (2 whole systems): the annotator&#x27;s own systems or a linked account&#x27;s" in page
    for viewer in (ada, None):
        other = Client()
        if viewer is not None:
            other.force_login(viewer)
        assert 'id="reach"' not in other.get(f"/campaigns/{campaign.slug}/").content.decode()
