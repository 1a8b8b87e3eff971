"""Citable snapshots: staff freeze a board as anonymous visitors see it; the snapshot is numbered,
dated, never changed (the database refuses an UPDATE), keeps its numbers while the live board moves
on, and links both ways with the live board; its JSON and CSV equal the live board's at freezing."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.db import DatabaseError, transaction
from django.db.models import ProtectedError

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from leaderboards.citable import FreezeRefused, snapshot_freeze
from leaderboards.models import CitableSnapshot
from scoring.models import EvaluationJob
from tests.platform.factories import UserFactory, submit, words
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


@pytest.fixture
def staff_client(client):
    staff = UserFactory(username="curator", password="a long staff password", is_staff=True)
    client.force_login(staff)
    return client


def test_staff_freeze_a_board_that_then_never_changes(client, staff_client, demo_dataset, board):
    from django.test import Client

    anonymous = Client()
    live_json = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/", {"download": "json"}).json()
    live_csv = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/", {"download": "csv"}).content.decode()
    assert "Private one" not in live_csv

    answer = staff_client.post(
        f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/freeze/", {"note": "for our paper"}
    )
    assert answer.status_code == 302
    assert answer["Location"] == f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1/"
    snapshot = CitableSnapshot.objects.get()
    assert (snapshot.number, snapshot.created_by, snapshot.note) == (1, "curator", "for our paper")

    # Its files are the live board's as anonymous visitors read it at that moment (never a private row).
    frozen = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.json").json()
    assert frozen["board_json"] == live_json
    assert frozen["number"] == 1
    assert frozen["live"].endswith(f"/datasets/{demo_dataset.slug}/leaderboard/")
    assert frozen["provenance"]["datasets"][demo_dataset.slug]["content_sha256"] == demo_dataset.content_sha256
    assert frozen["provenance"]["metrics"]["rouge_l"]["config_hash"]
    # Anyone can check a download against the digest the page shows.
    recomputed = hashlib.sha256(json.dumps([frozen["board_json"], frozen["provenance"]], sort_keys=True).encode())
    assert recomputed.hexdigest() == frozen["digest"] == snapshot.digest
    csv_text = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.csv").content.decode()
    assert csv_text == live_csv

    # The page: the board, a "cite this" block, a link to the live board; the live board links back.
    page = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1/").content.decode()
    assert 'id="cite-this"' in page
    assert "@misc{capbench-demo-snapshot-1," in page
    assert "Long captions" in page
    assert f'href="/datasets/{demo_dataset.slug}/leaderboard/" id="live-board"' in page
    assert "Private one" not in page
    assert "Without a number for any system, so not shown: " in page
    assert "Test: word count</th>" in page
    live_page = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert f'href="/datasets/{demo_dataset.slug}/leaderboard/snapshots/"' in live_page  # its snapshots
    assert "Freeze a citable snapshot" not in live_page  # the button is staff's
    latest = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/latest/")
    assert latest["Location"] == f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1/"

    # The live board moves on; the snapshot does not. The next one is number 2.
    newcomer = submit(board["owner"], demo_dataset, "Newcomer", caption=words(4), metrics=["test_words"], plan=True)
    run_jobs(EvaluationJob.objects.filter(system=newcomer.system))
    assert (
        "Newcomer" in anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/", {"download": "csv"}).content.decode()
    )
    assert anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.csv").content.decode() == live_csv
    staff_client.post(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/freeze/", {"note": "a\x00b"})
    assert list(CitableSnapshot.objects.order_by("number").values_list("number", "note")) == [
        (1, "for our paper"),
        (2, "ab"),
    ]
    assert "Newcomer" in anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/2.csv").content.decode()
    assert anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/latest/")["Location"].endswith("/2/")
    listed = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/").content.decode()
    assert listed.index('snapshots/2/">#2') < listed.index('snapshots/1/">#1')
    assert "for our paper" in listed

    # What its owner takes back is not republished: withdrawn after the freeze, the row keeps its
    # numbers and rank but loses its name and links, on the page, the files and the API.
    from catalog.uploads.services import upload_withdraw
    from submissions.services import SUBMISSIONS

    upload_withdraw(upload=board["long"], kind=SUBMISSIONS)
    again = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.json").json()
    row = next(r for r in again["board_json"]["systems"] if r.get("withdrawn"))
    frozen_row = next(r for r in frozen["board_json"]["systems"] if r["name"] == "Long captions")
    assert row["scores"] == frozen_row["scores"]
    assert row["rank"] == frozen_row["rank"]
    assert (row["name"], row["system"], row["paper_url"]) == ("(withdrawn or made private since)", "", "")
    for path in ("1.json", "1.csv", "1/"):
        text = anonymous.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/{path}").content.decode()
        assert "Long captions" not in text and "example.org/paper" not in text, path
    api = anonymous.get(f"/api/v1/snapshots/{snapshot.pk}/").content.decode()
    assert "Long captions" not in api
    assert "example.org/paper" not in api
    assert again["digest"] == frozen["digest"]  # the digest is the frozen payload's

    # Never changed: not through the model, not in SQL.
    with pytest.raises(ValueError, match="never changed"):
        snapshot.save()
    with pytest.raises(DatabaseError, match="never changed"), transaction.atomic():
        CitableSnapshot.objects.filter(pk=snapshot.pk).update(note="edited")
    assert CitableSnapshot.objects.get(pk=snapshot.pk).note == "for our paper"
    # Its dataset cannot be deleted from under it.
    with pytest.raises(ProtectedError):
        demo_dataset.delete()


def test_only_staff_freeze_and_only_public_boards(client, staff_client, demo_dataset, captioner):
    from django.test import Client

    member = Client()
    member.force_login(captioner)
    assert member.post(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/freeze/").status_code == 302  # to sign-in
    assert Client().post("/metrics/snapshots/freeze/").status_code == 302
    assert not CitableSnapshot.objects.exists()
    demo_dataset.is_public = False
    demo_dataset.save(update_fields=["is_public"])
    with pytest.raises(FreezeRefused):
        snapshot_freeze(dataset=demo_dataset, by="curator")
    # A snapshot of a dataset made private since is as hidden as the dataset.
    demo_dataset.is_public = True
    demo_dataset.save(update_fields=["is_public"])
    snapshot_freeze(dataset=demo_dataset, by="curator")
    demo_dataset.is_public = False
    demo_dataset.save(update_fields=["is_public"])
    for path in ("snapshots/1/", "snapshots/1.json", "snapshots/1.csv", "snapshots/", "snapshots/latest/"):
        assert Client().get(f"/datasets/{demo_dataset.slug}/leaderboard/{path}").status_code == 404, path
    assert Client().get("/api/v1/snapshots/").json()["count"] == 0
    assert (
        staff_client.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1/").status_code == 404
    )  # as its dataset


def test_the_metric_board_frozen_with_every_protocol_and_level(client, staff_client, demo_dataset):
    from scoring.models import CorrelationResult, Metric
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    version = Metric.objects.get(slug="bleu_4").current_version
    CorrelationResult.objects.create(
        metric_version=version, dataset=demo_dataset, dimension="expert", statistic="tau_c", level="caption",
        protocol="flickr8k-expert/paper@1", protocol_name="paper", value=0.3, low=0.2, high=0.4, n=100,
    )  # fmt: skip
    live = client.get("/api/v1/leaderboards/metrics/", {"protocol": "paper", "level": "caption"}).json()
    assert staff_client.post("/metrics/snapshots/freeze/")["Location"] == "/metrics/snapshots/1/"
    frozen = client.get("/metrics/snapshots/1.json").json()
    boards = {(b["protocol"], b["level"]): b for b in frozen["board_json"]["boards"]}
    assert set(boards) == {(p, level) for p in ("paper", "canonical", "live") for level in ("caption", "system")}
    paper = boards["paper", "caption"]
    # The same rows in the same order (ranked by the default column), and what they are sorted by.
    assert {k: paper[k] for k in ("protocol", "level", "sort", "order", "columns", "metrics")} == live
    assert frozen["provenance"]["protocols"] == ["flickr8k-expert/paper@1"]
    assert frozen["provenance"]["metrics"]["bleu_4"]["config_hash"] == version.config_hash
    csv_lines = client.get("/metrics/snapshots/1.csv").content.decode().splitlines()
    assert csv_lines[1].startswith("paper,caption,bleu_4,")
    assert ",0.3,0.2,0.4,30.0,20.0,40.0,100," in csv_lines[1]
    page = client.get("/metrics/snapshots/1/").content.decode()
    assert "30.0" in page
    assert 'id="live-board"' in page
    assert client.get("/metrics/snapshots/latest/")["Location"] == "/metrics/snapshots/1/"
    listed = client.get("/api/v1/snapshots/", {"board": "metric"}).json()["results"]
    assert [s["number"] for s in listed] == [1]
    assert listed[0]["page"].endswith("/metrics/snapshots/1/")
    detail = client.get(f"/api/v1/snapshots/{listed[0]['id']}/").json()
    assert detail["board_json"] == frozen["board_json"]
    assert detail["digest"] == frozen["digest"]


def test_a_snapshot_frozen_before_cells_had_points_shows_them_from_its_frozen_numbers(client, demo_dataset):
    """Its payload is never changed (its digest is of it); what it is shown as gets each number's
    points from the frozen metric's `points`, as a new snapshot carries them (docs/api.md)."""
    payload = {
        "dataset": demo_dataset.slug, "domain": None, "headline_metric": "cider_d", "people_dimension": None,
        "people_campaign": None,
        "metrics": [{"slug": "cider_d", "name": "CIDEr-D", "family": "ngram", "higher_is_better": True, "points": 100.0}],
        "systems": [{"rank": 1, "system": "gone", "name": "Gone", "kind": "submission", "baseline": False,
                     "paper_url": "", "code_url": "", "scores": {"cider_d": {"value": 0.0875, "state": "value",
                                                                             "low": 0.072, "high": 0.106}}}],
    }  # fmt: skip
    provenance = {"datasets": {demo_dataset.slug: {"title": "Demo"}}, "metrics": {}, "protocols": []}
    CitableSnapshot.objects.create(
        board="captioner", dataset=demo_dataset, number=1, created_by="curator", payload=payload,
        provenance=provenance, digest="0" * 64,
    )  # fmt: skip
    shown = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.json").json()["board_json"]
    cell = shown["systems"][0]["scores"]["cider_d"]
    assert (cell["value"], cell["low"], cell["high"]) == (0.0875, 0.072, 0.106)  # as frozen
    assert (cell["points"], cell["low_points"], cell["high_points"]) == (8.75, 7.2, 10.6)
    rows = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1.csv").content.decode().splitlines()
    assert rows[1].endswith(",8.75,7.2,10.6")
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/snapshots/1/").content.decode()
    assert '<td class="num" data-metric="cider_d">8.8<br><small>7.2–10.6</small></td>' in page
    assert CitableSnapshot.objects.get().payload == payload  # never changed
