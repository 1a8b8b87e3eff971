"""A metric version's signature wherever its numbers are read (scoring.signatures): the captioner
board's column tooltips, its JSON and CSV, the API's metrics and correlations, the metric board, a
metric's page and a citable snapshot; a number of the previous version, shown while the current one is
computed, carries its own; a snapshot frozen before signatures still renders and downloads as it was."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client

import tests.platform.scoring.plugins  # noqa: F401  (test_words)
from capbench_eval.metrics import get
from capbench_eval.signatures import signature
from catalog.services.candidates import caption_keys
from leaderboards.citable import snapshot_freeze
from leaderboards.models import CitableSnapshot
from leaderboards.snapshots import board_refresh
from scoring.models import EvaluationJob, Metric, MetricVersion
from scoring.services.metrics import metrics_sync
from scoring.services.planning import dataset_plan
from scoring.signatures import version_signature
from tests.platform.factories import UserFactory, submit, words
from tests.platform.scoring.inline import run_jobs
from tests.worlds import kept, metric_registry
from workbench.services import MetricInfo, ScoresFile, metric_submit

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]

METRIC = "test_words"


@pytest.fixture
def scored(demo_dataset):
    """A public submission on the demo dataset, scored by the word count (once per test process,
    copied back after: tests/worlds.py)."""

    def built():
        submit(UserFactory(username="wordy"), demo_dataset, "Wordy", caption=words(3), metrics=[METRIC], plan=True)
        run_jobs(EvaluationJob.objects.filter(system__isnull=False))
        return demo_dataset

    return kept("demo with a wordy submission", built, inputs=metric_registry())


@pytest.fixture
def correlated(demo_dataset):
    """The demo's own candidates scored by the word count: its correlations with people (the
    metric board's and the API's)."""
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=[METRIC]))
    return demo_dataset


@pytest.fixture
def now():
    """The word count's signature as the library prints it today."""
    return signature(get(METRIC))


def _board(dataset, **query) -> str:
    return Client().get(f"/datasets/{dataset.slug}/leaderboard/", query).content.decode()


def test_a_board_columns_tooltip_gives_its_signature(scored, now):
    assert f"signature: {now}" in _board(scored)


def test_a_boards_json_gives_each_columns_signature(scored, now):
    board = Client().get(f"/api/v1/leaderboards/{scored.slug}/").json()
    assert {m["slug"]: m["signature"] for m in board["metrics"]}[METRIC] == now


def test_a_boards_csv_gives_each_numbers_signature_after_the_other_columns(scored, now):
    text = _board(scored, download="csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {row["name"]: row[f"{METRIC}_signature"] for row in rows}["Wordy"] == now


def test_the_csv_signature_columns_come_last(scored):
    head = next(csv.reader(io.StringIO(_board(scored, download="csv"))))
    signed = [name for name in head if name.endswith("_signature")]
    assert head[-len(signed) :] == signed


def test_a_number_of_the_previous_version_carries_its_own_signature(scored, now, monkeypatch):
    """A new configuration is a new version; until it is computed the board keeps the previous
    version's number, which must not be read as the new version's."""
    monkeypatch.setattr(type(get(METRIC)), "config", lambda self: {"counting": "spaces"})
    metrics_sync()
    board_refresh(dataset_id=scored.pk)
    board = Client().get(f"/api/v1/leaderboards/{scored.slug}/").json()
    wordy = next(row for row in board["systems"] if row["name"] == "Wordy")
    shown = ({m["slug"]: m["signature"] for m in board["metrics"]}[METRIC], wordy["scores"][METRIC]["signature"])
    assert shown == (signature(get(METRIC)), now)


def test_the_csv_gives_the_previous_versions_signature_for_its_number(scored, now, monkeypatch):
    monkeypatch.setattr(type(get(METRIC)), "config", lambda self: {"counting": "spaces"})
    metrics_sync()
    board_refresh(dataset_id=scored.pk)
    rows = list(csv.DictReader(io.StringIO(_board(scored, download="csv"))))
    assert {row["name"]: row[f"{METRIC}_signature"] for row in rows}["Wordy"] == now


def test_a_metric_page_shows_its_signature_to_copy(now):
    metrics_sync()
    page = Client().get(f"/metrics/{METRIC}/").content.decode()
    assert f'<pre class="signature"><code>{now}</code></pre>' in page


def test_the_metric_api_gives_the_current_versions_signature(now):
    metrics_sync()
    assert Client().get(f"/api/v1/metrics/{METRIC}/").json()["signature"] == now


def test_the_metric_api_gives_no_signature_before_a_version_exists():
    Metric.objects.create(slug="versionless", name="Versionless", family="test")
    assert Client().get("/api/v1/metrics/versionless/").json()["signature"] is None


def test_each_correlation_gives_its_versions_signature(correlated, now):
    found = Client().get("/api/v1/correlations/", {"metric": METRIC, "dataset": correlated.slug}).json()["results"]
    assert {cell["signature"] for cell in found} == {now}


def test_each_per_caption_score_gives_its_versions_signature(scored, now, django_assert_max_num_queries):
    client = Client()
    with django_assert_max_num_queries(12):  # the version's fields come with the page's rows
        page = client.get("/api/v1/scores/", {"dataset": scored.slug, "metric": METRIC}).json()
    assert len(page["results"]) == 100
    assert {row["signature"] for row in page["results"]} == {now}


def test_each_upload_of_a_submitted_metric_gives_its_versions_signature(demo_dataset):
    owner = UserFactory()
    keys = caption_keys(demo_dataset)
    scores = "\n".join(json.dumps({"caption_id": key, "score": len(key) / 10}) for key in keys).encode()
    upload = metric_submit(owner=owner, info=MetricInfo("Lengthy"), files=[ScoresFile(demo_dataset, "s.jsonl", scores)])
    client = Client()
    client.force_login(owner)
    found = client.get(f"/api/v1/metric-submissions/{upload.submission_id}/").json()
    expected = version_signature(MetricVersion.objects.select_related("metric").get(pk=upload.metric_version_id))
    assert expected.startswith(f"{upload.submission.metric.slug}|v:1|uploaded|scores:")
    assert [entry["signature"] for entry in found["uploads"]] == [expected]


def test_the_metric_board_gives_each_metrics_signature(correlated, now):
    board = Client().get("/api/v1/leaderboards/metrics/", {"protocol": "canonical"}).json()
    assert {row["metric"]: row["signature"] for row in board["metrics"]}[METRIC] == now


def test_the_metric_boards_row_tooltip_gives_its_signature(correlated, now):
    page = Client().get("/metrics/", {"protocol": "canonical"}).content.decode()
    assert f"signature: {now}" in page


def test_a_citable_snapshot_carries_each_columns_signature(scored, now):
    frozen = snapshot_freeze(dataset=scored, by="curator")
    assert (
        {m["slug"]: m["signature"] for m in frozen.payload["metrics"]}[METRIC],
        frozen.provenance["metrics"][METRIC]["signature"],
    ) == (now, now)


def test_a_citable_snapshots_page_shows_the_signatures(scored, now):
    frozen = snapshot_freeze(dataset=scored, by="curator")
    page = Client().get(f"/datasets/{scored.slug}/leaderboard/snapshots/{frozen.number}/").content.decode()
    assert f"signature <code>{now}</code>" in page


def _frozen_before_signatures(dataset) -> CitableSnapshot:
    """A snapshot as one frozen before boards carried signatures stored it."""
    frozen = snapshot_freeze(dataset=dataset, by="curator")
    payload = json.loads(json.dumps(frozen.payload))
    for metric in payload["metrics"]:
        del metric["signature"]
    provenance = json.loads(json.dumps(frozen.provenance))
    for found in provenance["metrics"].values():
        del found["signature"]
    return CitableSnapshot.objects.create(
        board=frozen.board,
        dataset=dataset,
        number=frozen.number + 1,
        created_by="curator",
        payload=payload,
        provenance=provenance,
        digest=frozen.digest,
    )


def test_a_snapshot_frozen_before_signatures_still_renders(scored):
    old = _frozen_before_signatures(scored)
    answer = Client().get(f"/datasets/{scored.slug}/leaderboard/snapshots/{old.number}/")
    assert (answer.status_code, "Wordy" in answer.content.decode()) == (200, True)


def test_a_snapshot_frozen_before_signatures_keeps_its_csv_columns(scored):
    old = _frozen_before_signatures(scored)
    text = Client().get(f"/datasets/{scored.slug}/leaderboard/snapshots/{old.number}.csv").content.decode()
    assert not [name for name in next(csv.reader(io.StringIO(text))) if name.endswith("_signature")]
