"""The boards and live human evaluation: a campaign's people column on the captioner board only once
an organiser chose it and it has enough answers (the dataset's imported judgments until then, the
column saying whose ratings it shows, how many and their agreement), its label, numbers, intervals
and a link to the campaign; rows only for the systems the viewer may see, rebuilt when the
campaign's results change; the metric board's live tab, a column per campaign labelled by it, never
merged with another campaign's or the dataset's own protocols."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from campaigns.models import Campaign, CampaignResults
from campaigns.rubrics import ACCR
from campaigns.services.results import campaign_refresh
from catalog.uploads.services import upload_visibility_set
from leaderboards.captioner import captioner_board
from leaderboards.metric_board import PROTOCOLS, metric_board
from leaderboards.models import BoardSnapshot
from leaderboards.snapshots import board_refresh
from scoring.models import CorrelationResult, Metric, SignificanceResult
from scoring.services.metrics import metrics_sync
from submissions.services import SUBMISSIONS
from tests.platform.campaigns.helpers import live_campaign
from tests.platform.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]


def test_a_new_campaign_never_replaces_the_imported_judgments_by_itself(
    client, demo_dataset, three, django_capture_on_commit_callbacks, settings
):
    """Answers in a new campaign leave the board's people column to the dataset's own judgments,
    which it says it shows (how many, their agreement); chosen by staff, the campaign takes the
    column only once every system it ranks has the minimum of answers (CAPBENCH_PEOPLE_*)."""
    good, poor, hidden = (three[k].system for k in ("good", "poor", "later private"))
    before = board_refresh(dataset_id=demo_dataset.pk)
    assert before["people"] == "overall"
    assert before["people_campaign"] is None
    source = before["people_source"]
    assert source["source"] == "judgments"
    assert source["ratings"] > 0
    assert "imported" in source["who"]
    campaign = live_campaign(demo_dataset, [good, poor, hidden], {good.pk: 4, poor.pk: 2, hidden.pk: 5})
    with django_capture_on_commit_callbacks(execute=True):
        campaign_refresh(campaign_id=campaign.pk)
    assert BoardSnapshot.objects.get(dataset=demo_dataset).payload["people"] == "overall"  # not chosen: unchanged
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert f"People: {source['who']}, {source['ratings']:,} ratings" in page

    staff = get_user_model().objects.get(username="curator")
    client.force_login(staff)
    with django_capture_on_commit_callbacks(execute=True):  # the board is rebuilt after the commit
        response = client.post(f"/campaigns/{campaign.slug}/board/", {"on_board": "1"})
    assert response.status_code == 302 and Campaign.objects.get(pk=campaign.pk).on_board
    client.logout()
    pending = BoardSnapshot.objects.get(dataset=demo_dataset).payload  # chosen, below the minimum of 30 images
    assert pending["people"] == "overall"
    assert "Live ratings will replace this column once" in (pending["people_source"]["pending"])
    assert "30 images with 3 answers each" in client.get(f"/campaigns/{campaign.slug}/").content.decode()

    settings.CAPBENCH_PEOPLE_IMAGES = 3  # every system of the campaign has three images rated thrice
    board_refresh(dataset_id=demo_dataset.pk)
    payload = BoardSnapshot.objects.get(dataset=demo_dataset).payload
    assert payload["people_source"]["source"] == "campaign"
    assert payload["people_source"]["alpha"] is not None
    stored = CampaignResults.objects.get(campaign=campaign).payload["people"]
    assert payload["people_source"]["ratings"] == sum(cell["n"] for cell in stored.values())  # the cells' own
    assert payload["people"] == "Live ratings: mean rating (1-5)"
    assert payload["people_campaign"] == {"slug": "live", "title": "Live ratings", "mode": "rating"}
    stored = CampaignResults.objects.get(campaign=campaign).payload["people"]
    with_people = {row["system"]["id"] for row in payload["rows"] if "people" in row}
    assert with_people == {good.pk, poor.pk, hidden.pk}  # the campaign's cells, not the imported ones

    upload_visibility_set(upload=three["later private"], is_public=False, kind=SUBMISSIONS)
    board_refresh(dataset_id=demo_dataset.pk)
    _, rows = captioner_board(demo_dataset, sort="people")
    ranked = [row for row in rows if row.people is not None]
    assert [row.system.id for row in ranked] == [good.pk, poor.pk]  # the private one's row is gone
    assert hidden.pk not in {row.system.id for row in rows}
    for row in ranked:
        cell = stored[str(row.system.id)]
        assert row.people.value == pytest.approx(cell["value"])
        assert row.people.state == "value"
        assert row.people.low < row.people.value < row.people.high  # an interval, images resampled
        assert "ratings in Live ratings" in row.people.note
    assert 3.5 < ranked[0].people.value < 4.5
    assert 1.5 < ranked[1].people.value < 2.5

    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert "Live ratings: mean rating (1-5)" in page
    assert 'href="/campaigns/live/"' in page
    assert "Soon private captioner" not in page
    data = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=json").json()
    assert data["people_dimension"] == "Live ratings: mean rating (1-5)"
    assert data["people_campaign"]["slug"] == "live"
    people = {s["name"]: s["people"]["value"] for s in data["systems"] if "people" in s}
    assert set(people) == {"Good captioner", "Poor captioner"}
    assert people["Good captioner"] == pytest.approx(stored[str(good.pk)]["value"])
    csv_head = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=csv").content.decode().splitlines()[0]
    assert "people_live,people_live_low,people_live_high" in csv_head
    api = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()
    assert api["people_campaign"]["title"] == "Live ratings"
    assert api["people_dimension"] == payload["people"]
    assert "people" not in json.dumps([s for s in api["systems"] if s["name"] == "Soon private captioner"])
    system_page = client.get(f"/datasets/{demo_dataset.slug}/systems/{good.slug}/").content.decode()
    assert "People (Live ratings: mean rating (1-5))" in system_page
    assert 'href="/campaigns/live/"' in system_page

    # The owner still sees their (now private) system, with the number it had.
    _, owners_rows = captioner_board(demo_dataset, viewer=three["later private"].owner)
    assert next(row for row in owners_rows if row.system.id == hidden.pk).people is not None

    # Renamed: the board says so at once (its ETag moves although no number did).
    board_url = f"/datasets/{demo_dataset.slug}/leaderboard/"
    etag = client.get(board_url)["ETag"]
    with django_capture_on_commit_callbacks(execute=True):
        campaign.title = "Summer ratings"
        campaign.save(update_fields=["title"])
    renamed = client.get(board_url, HTTP_IF_NONE_MATCH=etag)
    assert renamed.status_code == 200
    assert "Summer ratings: mean rating (1-5)" in renamed.content.decode()

    # A campaign deleted: the board goes back to what it showed before.
    with django_capture_on_commit_callbacks(execute=True):
        campaign.delete()
    after = BoardSnapshot.objects.get(dataset=demo_dataset).payload
    assert after["people"] == before["people"]
    assert after["people_campaign"] is None


def test_an_arena_is_labelled_as_one(demo_dataset, three, settings):
    settings.CAPBENCH_PEOPLE_ANSWERS, settings.CAPBENCH_PEOPLE_IMAGES = 1, 3  # (75 answers over 100 images)
    good, poor = three["good"].system, three["poor"].system
    campaign = live_campaign(
        demo_dataset, [good, poor], {good.pk: 4, poor.pk: 2}, slug="duel", title="Duel", mode="arena"
    )
    campaign_refresh(campaign_id=campaign.pk)
    Campaign.objects.filter(pk=campaign.pk).update(on_board=True)
    payload = board_refresh(dataset_id=demo_dataset.pk)
    assert payload["people"] == "Duel: arena strength (0-100)"
    assert payload["people_campaign"]["mode"] == "arena"
    _, rows = captioner_board(demo_dataset, sort="people")
    assert [row.system.id for row in rows[:2]] == [good.pk, poor.pk]
    assert rows[0].people.value > 50
    source = payload["people_source"]
    assert source["alpha"] is None
    assert "compares each pair of captions once" in source["alpha_note"]


def test_the_metric_board_has_a_live_column_per_campaign(client, demo_dataset, three):
    metrics_sync()
    version = Metric.objects.get(slug="bleu_4").current_version
    systems = [three["good"].system, three["poor"].system]
    staff = UserFactory(username="curator", is_staff=True)
    first, second = (
        Campaign.objects.create(
            dataset=demo_dataset, slug=slug, title=title, rubric=[d.as_json() for d in ACCR], created_by=staff
        )
        for slug, title in (("spring", "Spring ratings"), ("autumn", "Autumn ratings"))
    )
    for campaign in (first, second):
        campaign.systems.set(systems)
    for campaign, value in ((first, 0.3), (second, 0.6)):  # the same dimension and statistic in both
        CorrelationResult.objects.create(
            metric_version=version, dataset=demo_dataset, dimension="mean", statistic="tau_b", level="caption",
            protocol=campaign.protocol_key, value=value, low=value - 0.1, high=value + 0.1, n=50,
        )  # fmt: skip
    CorrelationResult.objects.create(
        metric_version=version, dataset=demo_dataset, dimension="mean", statistic="tau_b", level="caption",
        protocol="flickr8k-expert/canonical@1", value=0.9, low=0.8, high=1.0, n=50,
    )  # fmt: skip
    SignificanceResult.objects.create(
        dataset=demo_dataset, protocol=first.protocol_key, level="caption", dimension="mean", statistic="tau_b",
        metrics=["bleu_4"], values=[0.3], p_values=[[None]], ranks=[1],
    )  # fmt: skip
    assert PROTOCOLS == ("paper", "canonical", "live")
    assert CorrelationResult.objects.filter(protocol=first.protocol_key).get().protocol_name == "live"

    headers, rows = metric_board(protocol_name="live")
    assert [(h.campaign.title, h.dimension, h.statistic) for h in headers] == [
        ("Autumn ratings", "mean", "tau_b"),
        ("Spring ratings", "mean", "tau_b"),
    ]  # two columns, never merged
    [bleu] = rows
    assert [cell.value for cell in bleu.values] == [0.6, 0.3]
    assert bleu.ranks == [None, 1]  # each column's own clusters
    assert bleu.published == [None, None]
    canonical, _ = metric_board(protocol_name="canonical")
    assert [(h.protocol, h.campaign) for h in canonical] == [("flickr8k-expert/canonical@1", None)]

    page = client.get("/metrics/", {"protocol": "live"}).content.decode()
    assert '<option value="live" selected>Live campaigns</option>' in page
    assert '<a href="/campaigns/spring/">Spring ratings</a>' in page
    assert '<a href="/campaigns/autumn/">' in page
    assert "60.0" in page
    assert "30.0" in page
    assert "90.0" not in page
    assert "Live campaigns" in client.get("/metrics/").content.decode()  # offered on every tab
    api = client.get("/api/v1/leaderboards/metrics/", {"protocol": "live"}).json()
    assert [(c["campaign"]["slug"], c["protocol"]) for c in api["columns"]] == [
        ("autumn", second.protocol_key),
        ("spring", first.protocol_key),
    ]
    assert [cell["value"] for cell in api["metrics"][0]["cells"]] == [0.6, 0.3]

    detail = client.get("/metrics/bleu_4/", {"dataset": demo_dataset.slug}).content.decode()
    assert 'live: <a href="/campaigns/spring/">Spring ratings</a>' in detail
    assert "flickr8k-expert/canonical@1" in detail
    assert detail.index("flickr8k-expert/canonical@1") < detail.index("Spring ratings")  # its own protocols first

    # A deleted campaign's correlations leave the board and the metric's page.
    second.delete()
    headers, _ = metric_board(protocol_name="live")
    assert [h.campaign.slug for h in headers] == ["spring"]
    assert "autumn" not in client.get("/metrics/bleu_4/", {"dataset": demo_dataset.slug}).content.decode()


def test_on_a_hidden_test_set_the_columns_agreement_is_staffs(client, demo_dataset, three, settings):
    """A campaign's α is withheld from all but staff on a hidden test set (as on its own page and
    API); its page still says truly that it is the board's column."""
    from catalog.models import Dataset

    settings.CAPBENCH_PEOPLE_IMAGES = 3
    good, poor = three["good"].system, three["poor"].system
    campaign = live_campaign(demo_dataset, [good, poor], {good.pk: 4, poor.pk: 2})
    campaign_refresh(campaign_id=campaign.pk)
    Campaign.objects.filter(pk=campaign.pk).update(on_board=True)
    Dataset.objects.filter(pk=demo_dataset.pk).update(references_hidden=True)
    board_refresh(dataset_id=demo_dataset.pk)
    board = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()
    assert board["people_column"]["kind"] == "campaign"
    assert board["people_column"]["alpha"] is None
    assert "hidden test set" in board["people_column"]["alpha_note"]
    assert client.get(f"/api/v1/campaigns/{campaign.slug}/").json()["results"]["agreement"] is None
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert "Krippendorff" not in page
    assert "withheld on a hidden test set" in page
    assert "The people column of" in client.get(f"/campaigns/{campaign.slug}/").content.decode()
    staff = get_user_model().objects.get(username="curator")
    client.force_login(staff)
    seen = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()["people_column"]["alpha"]
    assert seen is not None and seen["low"] <= seen["value"] <= seen["high"]


def test_only_staff_choose_a_campaign_for_the_board_and_may_take_it_back(
    client, demo_dataset, three, django_capture_on_commit_callbacks
):
    good, poor = three["good"].system, three["poor"].system
    campaign = live_campaign(demo_dataset, [good, poor], {good.pk: 4, poor.pk: 2}, rounds=2)
    client.force_login(three["good"].owner)  # a submitter, not staff
    refused = client.post(f"/campaigns/{campaign.slug}/board/", {"on_board": "1"})
    assert refused.status_code == 302
    assert "/login/" in refused["Location"]
    assert not Campaign.objects.get(pk=campaign.pk).on_board
    client.force_login(get_user_model().objects.get(username="curator"))
    other = live_campaign(demo_dataset, [good, poor], {good.pk: 4, poor.pk: 2}, slug="other", rounds=1)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/{campaign.slug}/board/", {"on_board": "1"})
        client.post(f"/campaigns/{other.slug}/board/", {"on_board": "1"})  # one per dataset: the other is unchosen
    assert list(Campaign.objects.filter(on_board=True).values_list("slug", flat=True)) == ["other"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/campaigns/{other.slug}/board/", {"on_board": "0"})
    assert not Campaign.objects.filter(on_board=True).exists()
    assert BoardSnapshot.objects.get(dataset=demo_dataset).payload["people"] == "overall"
