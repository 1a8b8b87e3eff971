"""The campaigns in the API: the list and one campaign with its results, each showing only the
systems the caller may see; a campaign on a dataset the caller may not see answers 404."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from campaigns.models import Annotation
from campaigns.services.results import campaign_refresh
from catalog.uploads.services import upload_visibility_set
from submissions.services import SUBMISSIONS
from tests.platform.campaigns.helpers import live_campaign

pytestmark = pytest.mark.django_db


@pytest.fixture
def campaign(demo_dataset, three):
    good, poor, hidden = (three[k].system for k in ("good", "poor", "later private"))
    found = live_campaign(demo_dataset, [good, poor, hidden], {good.pk: 4, poor.pk: 2, hidden.pk: 3}, rounds=10)
    campaign_refresh(campaign_id=found.pk)
    upload_visibility_set(upload=three["later private"], is_public=False, kind=SUBMISSIONS)
    return found


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_the_list_and_one_campaign_show_only_visible_systems(client, campaign, three):
    hidden = three["later private"].system
    listed = client.get("/api/v1/campaigns/").json()
    assert listed["count"] == 1
    [found] = listed["results"]
    assert {k: found[k] for k in ("slug", "title", "dataset", "mode", "status", "audience", "ratings_wanted")} == {
        "slug": "live",
        "title": "Live ratings",
        "dataset": "demo",
        "mode": "rating",
        "status": "open",
        "audience": "signed_in",
        "ratings_wanted": 3,
    }
    assert [d["key"] for d in found["rubric"]] == ["accuracy", "completeness", "conciseness", "relevance"]
    assert found["rubric"][0]["low"] == 1
    assert found["rubric"][0]["labels"]["5"] == "all true"
    assert [s["name"] for s in found["systems"]] == ["Good captioner", "Poor captioner"]  # not the private one
    answered = Annotation.objects.filter(campaign=campaign, status="answered")
    assert answered.count() == 30
    # Answers on captions everyone may see: not the private one's (no count depends on hidden work).
    assert found["answers"] == answered.exclude(caption__system=hidden).count() == 20
    assert found["annotator_count"] == 3
    assert found["url"].endswith("/campaigns/live/")
    assert "results" not in found

    detail = client.get("/api/v1/campaigns/live/").json()
    assert {k: v for k, v in detail.items() if k not in ("results", "resemblance")} == found
    assert detail["resemblance"] is None  # annotators who answer alike: staff's (test_resemblance.py)
    results = detail["results"]
    assert set(results["people"]) == {str(three["good"].system_id), str(three["poor"].system_id)}
    assert str(hidden.pk) not in results["people"]
    good = results["people"][str(three["good"].system_id)]
    assert good["low"] <= good["value"] <= good["high"]
    assert good["n"] > 0
    assert set(results["agreement"]) == {"accuracy", "completeness", "conciseness", "relevance", "mean"}
    assert results["bradley_terry"] is None
    assert results["people_dimension"] == "mean"
    assert len(results["annotators"]) == 3
    assert all(name.startswith("annotator-") for name in results["annotators"])
    one = next(iter(results["annotators"].values()))
    assert one["answers"] == 10 and one["flagged"] is False and one["excluded"] is False
    assert {"skips", "gold", "gold_accuracy", "median_seconds"} <= set(one)
    assert results["answers"] == 30 and results["computed_at"]  # computed while all three were public

    # Its owner sees the private system, in the list and in the results.
    client.force_login(three["later private"].owner)
    mine = client.get("/api/v1/campaigns/live/").json()
    assert "Soon private captioner" in [s["name"] for s in mine["systems"]]
    assert str(hidden.pk) in mine["results"]["people"]


def test_a_campaign_before_its_first_results_and_one_that_does_not_exist(client, campaign):
    campaign.results.delete()
    assert client.get("/api/v1/campaigns/live/").json()["results"] is None
    assert client.get("/api/v1/campaigns/no-such-campaign/").status_code == 404


def test_a_campaign_on_a_dataset_not_public_is_staffs(client, demo_dataset, campaign, captioner):
    demo_dataset.is_public = False
    demo_dataset.save(update_fields=["is_public"])
    for viewer in (None, captioner):
        if viewer is not None:
            client.force_login(viewer)
        assert client.get("/api/v1/campaigns/live/").status_code == 404
        assert client.get("/api/v1/campaigns/").json()["count"] == 0
    client.force_login(get_user_model().objects.create_user("boss", is_staff=True))
    assert client.get("/api/v1/campaigns/live/").status_code == 200
    assert [c["slug"] for c in client.get("/api/v1/campaigns/").json()["results"]] == ["live"]
