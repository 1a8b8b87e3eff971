"""A submission's results card: numbers ×100 with intervals, ranks among the public systems with
ties, gaps to the best and to the baselines, and what has no number in plain words (the detail for
staff only, here and in the progress the page polls)."""

import re

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from submissions.cards import results_card
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_ranks_share_ties_and_gaps_are_measured_against_the_best_and_the_baselines(demo_dataset, board):
    tie = board["tie"].system
    tie.is_baseline = True
    tie.save()
    card = results_card(submission=board["short"])
    words = next(line for line in card.lines if line.metric.slug == "test_words")
    # Public: Long (6 words), Broken (3), Also short (2, baseline); the private one (9) is not counted.
    number = words.number  # as the board shows it: native, and ×100 where people read it
    assert (number.value, number.low, number.high, number.points, number.low_points) == (2.0, 2.0, 2.0, 200.0, 200.0)
    assert (words.rank, words.tied, words.ranked) == (3, True, 4)
    assert (words.best.name, words.best.number.points, words.best.gap.value, words.best.gap.points) == (
        "Long captions", 600.0, -4.0, -400.0,
    )  # fmt: skip
    assert [(gap.name, gap.gap.points) for gap in words.baselines] == [("Also short", 0.0)]
    assert card.public_systems == 4  # and the dataset's own human captions (no word count: not ranked here)
    best = results_card(submission=board["long"])
    top = next(line for line in best.lines if line.metric.slug == "test_words")
    assert (top.rank, top.tied, top.best.name, top.best.gap.points) == (1, False, "Broken", 300.0)


def test_what_has_no_number_is_said_in_plain_words_and_the_detail_is_for_staff(client, demo_dataset, board):
    broken = board["broken"]
    card = results_card(submission=broken)
    missing = {line.metric.slug: line for line in card.missing}
    assert missing["test_broken"].detail == "boom"
    assert "could not be scored" in missing["test_broken"].words
    assert "test_broken" not in {line.metric.slug for line in card.lines}
    page = client.get(f"/submissions/{broken.pk}/").content.decode()
    section = re.search(r'<section class="card" id="results-card".*?</section>', page, re.S).group(0)
    assert re.search(r"<li>[^<]*Test: always raises[^<]*: could not be scored", section)
    assert "boom" not in page
    progress = client.get(f"/submissions/{broken.pk}/progress.json").json()
    assert {m["metric"]: m["error"] for m in progress["metrics"]}["test_broken"].startswith("could not be scored")
    staff = UserFactory(username="staffer", is_staff=True)
    client.force_login(staff)
    assert "(staff: boom)" in client.get(f"/submissions/{broken.pk}/").content.decode()
    assert {m["metric"]: m["error"] for m in client.get(f"/submissions/{broken.pk}/progress.json").json()["metrics"]}[
        "test_broken"
    ] == "boom"


def test_the_card_on_the_page_shows_values_intervals_and_ranks(client, demo_dataset, board):
    page = client.get(f"/submissions/{board['long'].pk}/").content.decode()
    row = re.search(r'<tr data-metric="test_words">.*?</tr>', page, re.S).group(0)
    assert ">600.0<" in row
    assert "600.0–600.0" in row
    assert "1 of 4" in row
    assert "+300.0" in row


def test_the_api_gives_the_servers_own_errors_to_staff_only(demo_dataset, board):
    from rest_framework.test import APIClient

    broken = board["broken"]
    api = APIClient()
    api.force_authenticate(board["owner"])
    data = api.get(f"/api/v1/submissions/{broken.pk}/").json()
    assert data["status"] == "failed"
    assert "boom" not in json_text(data)
    assert data["error"].startswith("one or more metrics could not be scored")
    progress = api.get(f"/api/v1/submissions/{broken.pk}/progress/").json()
    assert "boom" not in json_text(progress)
    assert progress["error"] == ""
    api.force_authenticate(UserFactory(username="staffer", is_staff=True))
    assert "boom" in api.get(f"/api/v1/submissions/{broken.pk}/").json()["error"]
    assert "boom" in json_text(api.get(f"/api/v1/submissions/{broken.pk}/progress/").json())


def json_text(data) -> str:
    import json

    return json.dumps(data)
