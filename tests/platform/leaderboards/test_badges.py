"""README badges: the number and rank are the board's (as anonymous visitors see it), the SVG is well
formed with every user string escaped, a system, dataset or metric the viewer may not see is 404,
a metric without a number says so, and the headers let shared caches keep public badges only."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from catalog.models import Dataset
from catalog.uploads.services import upload_withdraw
from leaderboards.rendering import points
from scoring.models import EvaluationJob, Metric
from submissions.services import SUBMISSIONS
from tests.platform.factories import UserFactory, submit, words
from tests.platform.scoring.inline import run_jobs
from workbench.models import MetricSubmission

pytestmark = pytest.mark.django_db(transaction=True)
SVG = "{http://www.w3.org/2000/svg}"


def _url(dataset, submission, metric: str | None = "test_words") -> str:
    tail = "badge.svg" if metric is None else f"badge/{metric}.svg"
    return f"/datasets/{dataset.slug}/systems/{submission.system.slug}/{tail}"


def _read(response) -> tuple[ET.Element, list[str]]:
    """The SVG's root and its visible texts (the shadow copies left out)."""
    root = ET.fromstring(response.content)
    texts = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("aria-hidden") != "true"]
    return root, texts


def _colour(response) -> str:
    """The fill of the badge's right half (the rectangle that starts where the label ends)."""
    return next(r.get("fill") for r in ET.fromstring(response.content).iter(f"{SVG}rect") if r.get("x"))


def test_the_badge_shows_the_boards_number_and_rank(fresh_page_memory, client, demo_dataset, board):
    data = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?sort=test_words&download=json").json()
    scale = next(m["points"] for m in data["metrics"] if m["slug"] == "test_words")
    by_slug = {row["system"]: row for row in data["systems"]}
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?sort=test_words").content.decode()
    for name in ("long", "short", "tie", "broken"):
        row = by_slug[board[name].system.slug]
        shown = points(row["scores"]["test_words"]["value"], scale)
        assert f'data-metric="test_words">{shown}<' in page  # the board page's own cell
        response = client.get(_url(demo_dataset, board[name]))
        assert response.status_code == 200
        root, texts = _read(response)
        assert texts == ["Test: word count", f"{shown} · #{row['rank']} on Demo"]
        assert root.get("role") == "img"
        assert root.get("aria-label") == root.find(f"{SVG}title").text
        assert root.find(f"{SVG}title").text.startswith(f"{board[name].system.name} on Demo: Test: word count {shown}")
    # A tie shares its rank (competition ranking), as on the board: 600, 300, 200, 200.
    assert [by_slug[board[n].system.slug]["rank"] for n in ("long", "broken", "short", "tie")] == [1, 2, 3, 3]
    assert _read(client.get(_url(demo_dataset, board["tie"])))[1][1] == "200.0 · #3 on Demo"
    colours = {name: _colour(client.get(_url(demo_dataset, board[name]))) for name in ("long", "short")}
    assert colours == {"long": "#4c1", "short": "#97ca00"}


def test_the_headline_badge_is_the_headline_metrics(client, demo_dataset, board):
    Dataset.objects.filter(pk=demo_dataset.pk).update(headline_metric="test_words")
    headline = client.get(_url(demo_dataset, board["long"], None))
    assert headline.content == client.get(_url(demo_dataset, board["long"])).content


def test_a_metric_without_a_number_says_so_in_grey(client, demo_dataset, board):
    response = client.get(_url(demo_dataset, board["tie"], "rouge_l"))  # "Also short" was not scored by ROUGE-L
    assert response.status_code == 200
    root, texts = _read(response)
    assert texts[1] == "no score yet"
    assert _colour(response) == "#9f9f9f"
    failed = client.get(_url(demo_dataset, board["broken"], "test_broken"))  # its job failed
    assert _read(failed)[1][1] == "no score yet"


def test_headers_cache_and_policy(client, demo_dataset, board):
    response = client.get(_url(demo_dataset, board["long"]))
    assert response["Content-Type"] == "image/svg+xml"
    assert response["Content-Security-Policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert response["Cache-Control"] == "public, max-age=300"
    etag = response["ETag"]
    assert etag.startswith('"')
    assert etag.endswith('"')
    again = client.get(_url(demo_dataset, board["long"]), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again["ETag"] == etag
    body = response.content.decode()
    assert "href" not in body.replace('clip-path="url(#r)"', "")
    assert "http://" not in body.replace('xmlns="http://www.w3.org/2000/svg"', "")  # nothing outside itself
    assert "<script" not in body


def test_private_withdrawn_and_unknown_are_404(client, demo_dataset, board):
    hidden = _url(demo_dataset, board["hidden"])
    assert client.get(hidden).status_code == 404
    client.force_login(UserFactory(username="stranger"))
    assert client.get(hidden).status_code == 404
    client.force_login(board["owner"])
    mine = client.get(hidden)
    assert mine.status_code == 200
    assert mine["Cache-Control"] == "private, no-store"
    # Its rank among the public systems and itself: 9 words beat every public one.
    assert _read(mine)[1][1] == "900.0 · #1 on Demo"
    upload_withdraw(upload=board["broken"], kind=SUBMISSIONS)
    assert client.get(_url(demo_dataset, board["broken"])).status_code == 404  # its owner's too
    client.logout()
    assert client.get(_url(demo_dataset, board["long"], "no_such_metric")).status_code == 404
    assert client.get(f"/datasets/{demo_dataset.slug}/systems/no-such-system/badge.svg").status_code == 404
    metric = Metric.objects.create(slug="secret_metric", name="Secret", family="submitted", is_registered=False)
    MetricSubmission.objects.create(owner=board["owner"], metric=metric, is_public=False)
    assert client.get(_url(demo_dataset, board["long"], "secret_metric")).status_code == 404
    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    assert client.get(_url(demo_dataset, board["long"])).status_code == 404


def test_user_text_is_escaped(client, demo_dataset, settings):
    hostile = "<script>alert(\"x\")</script> & 'quoted' ]( [x]"
    Dataset.objects.filter(pk=demo_dataset.pk).update(title="Demo & <b>co</b>", headline_metric="test_words")
    submission = submit(
        UserFactory(username="mallory"), demo_dataset, hostile, caption=words(2), metrics=["test_words"], plan=True
    )
    run_jobs(EvaluationJob.objects.all())
    response = client.get(_url(demo_dataset, submission))
    body = response.content.decode()
    assert "<script" not in body
    assert "<b>" not in body
    root, texts = _read(response)  # well-formed XML
    assert texts[1] == "200.0 · #1 on Demo & <b>co</b>"
    assert root.find(f"{SVG}title").text.startswith(f"{hostile} on Demo & <b>co</b>: ")
    assert root.get("aria-label") == root.find(f"{SVG}title").text
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{submission.system.slug}/").content.decode()
    assert "<script>alert" not in page
    assert "<b>co</b>" not in page


def test_the_system_page_offers_the_badge_and_its_markdown(client, demo_dataset, board, settings):
    settings.SITE_URL = "https://capbench.example.org"  # the links a README keeps: never the request's Host
    Dataset.objects.filter(pk=demo_dataset.pk).update(headline_metric="test_words")
    system = board["long"].system.slug
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{system}/").content.decode()
    image = f"/datasets/{demo_dataset.slug}/systems/{system}/badge/test_words.svg"
    assert f'<img src="{image}" alt="Test: word count 600.0 · #1 on Demo">' in page
    markdown = (
        f"[![Test: word count 600.0 · #1 on Demo](https://capbench.example.org{image})]"
        f"(https://capbench.example.org/datasets/{demo_dataset.slug}/systems/{system}/)"
    )
    assert f"<code>{markdown}</code>" in page
    assert (
        f"https://capbench.example.org/datasets/{demo_dataset.slug}/systems/{system}/badge/&lt;metric slug&gt;.svg"
        in page
    )
    client.force_login(board["owner"])
    private = client.get(f"/datasets/{demo_dataset.slug}/systems/{board['hidden'].system.slug}/").content.decode()
    assert "badge/test_words.svg" not in private
    assert "once this system is public" in private
