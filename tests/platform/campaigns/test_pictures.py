"""A caption is never shown without its picture: an item whose media has no stored file (and no
image URL) is never assigned, an open task whose picture went away is not shown again, and a
campaign on a dataset with no picture at all is not opened (created or opened again), with the
reason given. The creation form and the campaign's page say how many items have no picture, and
the annotation page shows the picture under the task's own opaque URL."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from campaigns.models import Annotation, Campaign
from campaigns.pictures import dataset_pictures
from campaigns.services.assignment import task_next
from campaigns.services.creation import CampaignRefused, campaign_status_set
from catalog.models import Item, Media
from plumbing import storage
from tests.platform.campaigns.helpers import until_none

pytestmark = pytest.mark.django_db
GOOD = {"accuracy": 4, "completeness": 4, "conciseness": 4, "relevance": 4}


def pictures_removed(dataset, *, keep: int = 0) -> list[Item]:
    """Every item's picture gone but the first `keep` items'; returns the items that keep theirs."""
    items = list(Item.objects.filter(dataset=dataset).order_by("id"))
    kept = items[:keep]
    Media.objects.filter(dataset=dataset).exclude(items__in=kept).update(stored_path="")
    return kept


def staff_client(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def test_items_without_a_stored_file_or_an_image_url_are_counted(demo_pictures):
    assert dataset_pictures(demo_pictures).without == 0
    assert dataset_pictures(demo_pictures).words() == ""
    pictures_removed(demo_pictures, keep=97)
    counted = dataset_pictures(demo_pictures)
    assert (counted.items, counted.without, counted.none_shown) == (100, 3, False)
    assert counted.words().startswith("3 of 100 items have no picture")
    pictures_removed(demo_pictures)
    assert dataset_pictures(demo_pictures).none_shown


def test_an_image_url_on_an_allowed_host_is_a_picture_too(demo_pictures, settings):
    settings.CAPBENCH_MEDIA_HOSTS = ["images.cocodataset.org"]
    first, second = Media.objects.filter(dataset=demo_pictures, items__isnull=False).order_by("pk")[:2]
    Media.objects.filter(pk=first.pk).update(stored_path="", url="https://images.cocodataset.org/val2014/1.jpg")
    Media.objects.filter(pk=second.pk).update(stored_path="", url="https://elsewhere.example.org/2.jpg")
    assert dataset_pictures(demo_pictures).without == 1  # the one on a host the site does not show
    Item.objects.filter(media=first).update(media=None)
    assert dataset_pictures(demo_pictures).without == 2  # an item without media has no picture


def test_assignment_never_gives_a_caption_whose_image_has_no_picture(make_campaign, make_user, demo_pictures):
    campaign = make_campaign(ratings_wanted=1, gold_rate=0)
    kept = pictures_removed(demo_pictures, keep=3)
    done = until_none(campaign, make_user("ann"), lambda task: GOOD)
    assert len(done) == 6  # two systems' captions of the three pictured images, nothing else
    assert {task.item_id for task in done} == {item.pk for item in kept}


def test_an_open_task_whose_picture_went_away_is_not_shown_again(make_campaign, make_user, demo_pictures):
    campaign = make_campaign(ratings_wanted=1, gold_rate=0)
    ann = make_user("ann")
    first = task_next(campaign=campaign, annotator=ann)
    Media.objects.filter(items=first.item).update(stored_path="")
    second = task_next(campaign=campaign, annotator=ann)
    assert second is not None and second.item_id != first.item_id
    assert Annotation.objects.get(pk=first.pk).status == Annotation.Status.SKIPPED


def test_a_campaign_with_no_picture_to_show_is_neither_created_nor_opened_again(make_campaign, demo_pictures):
    open_one = make_campaign("before")
    campaign_status_set(campaign=open_one, status=Campaign.Status.CLOSED)
    pictures_removed(demo_pictures)
    with pytest.raises(CampaignRefused) as caught:
        make_campaign("after")
    assert set(caught.value.problems) == {"dataset"}
    assert "none of the 100 items of Demo has a picture" in caught.value.problems["dataset"]
    assert not Campaign.objects.filter(slug="after").exists()
    with pytest.raises(CampaignRefused):
        campaign_status_set(campaign=open_one, status=Campaign.Status.OPEN)
    assert Campaign.objects.get(pk=open_one.pk).status == Campaign.Status.CLOSED


def test_the_form_and_the_campaign_page_warn_of_items_without_pictures(make_campaign, staff, demo_pictures):
    campaign = make_campaign()
    client = staff_client(staff)
    assert 'id="pictures-missing"' not in client.get("/campaigns/new/?dataset=demo").content.decode()
    pictures_removed(demo_pictures, keep=60)
    form = client.get("/campaigns/new/?dataset=demo").content.decode()
    assert "40 of 100 items have no picture" in form
    page = Client().get(f"/campaigns/{campaign.slug}/").content.decode()  # anyone who sees the page
    assert 'id="pictures-missing"' in page
    assert "40 of 100 items have no picture" in page
    pictures_removed(demo_pictures)
    form = client.get("/campaigns/new/?dataset=demo").content.decode()
    assert "None of the 100 items has a picture" in form
    assert "A campaign on it is not opened." in form


def test_the_page_refuses_to_open_again_a_campaign_without_pictures_and_says_why(make_campaign, staff, demo_pictures):
    campaign = make_campaign()
    client = staff_client(staff)
    client.post(f"/campaigns/{campaign.slug}/status/", {"status": "closed"})
    pictures_removed(demo_pictures)
    response = client.post(f"/campaigns/{campaign.slug}/status/", {"status": "open"}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "The campaign stays closed: none of the 100 items of Demo has a picture" in page
    assert Campaign.objects.get(pk=campaign.pk).status == Campaign.Status.CLOSED


def test_the_annotation_page_shows_the_stored_picture(make_campaign, make_user):
    campaign = make_campaign(gold_rate=0)
    client = Client(REMOTE_ADDR="192.0.2.44")
    ann = make_user("ann")
    client.force_login(ann)
    page = client.get(f"/campaigns/{campaign.slug}/annotate/").content.decode()
    task = Annotation.objects.get(campaign=campaign, annotator=ann)
    # Under the task's own opaque name (blind annotation: tests/platform/campaigns/test_blind.py).
    shown = re.search(
        r'<figure class="task-media"><img [^>]*src="(/campaigns/live/annotate/picture/\w{32}/)"[^>]*>', page
    )
    assert shown, page
    assert 'alt="The image to judge the caption against"' in shown.group(0)
    served = client.get(shown.group(1))
    assert served.status_code == 200
    assert served["Content-Type"] == "image/png"
    with storage.open_stored(task.item.media.stored_path) as stored:
        assert b"".join(served.streaming_content) == stored.read()  # the picture itself is served
