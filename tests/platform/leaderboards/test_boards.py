"""Captioner and metric boards: sorting with missing values last, ranks, states, downloads,
filters and escaping of user text."""

import csv
import io
import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from leaderboards.captioner import captioner_board
from leaderboards.metric_board import metric_board
from scoring.services.planning import dataset_plan
from submissions.models import Submission
from tests.platform.factories import UserFactory, submit, words
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


def test_sorting_puts_values_in_order_and_everything_without_a_value_last(demo_dataset, board):
    _, rows = captioner_board(demo_dataset, sort="test_words")
    names = [row.system.name for row in rows]
    assert names[:4] == ["Long captions", "Broken", "Also short", "Short captions"]
    assert [row.cells["test_words"].rank for row in rows[:4]] == [1, 2, 3, 3]  # a tie shares its rank
    assert "Private one" not in names  # private submissions are the owner's only
    _, ascending = captioner_board(demo_dataset, sort="test_words", descending=False)
    assert [row.system.name for row in ascending][:2] == ["Also short", "Short captions"]
    _, by_rouge = captioner_board(demo_dataset, sort="rouge_l", descending=False)
    rouge_names = [row.system.name for row in by_rouge]
    # Only two submissions have ROUGE-L: every other row follows them, unranked, whatever the order.
    assert set(rouge_names[:3]) >= {"Long captions", "Short captions"}
    assert all(row.cells["rouge_l"].rank is None for row in by_rouge if row.system.name in ("Also short", "Broken"))
    assert rouge_names.index("Broken") > rouge_names.index("Long captions")


def test_cells_say_why_they_have_no_number(demo_dataset, board):
    _, rows = captioner_board(demo_dataset)
    broken = next(row for row in rows if row.system.name == "Broken")
    assert broken.cells["test_broken"].state == "failed"
    assert broken.cells["test_broken"].note == "boom"
    assert broken.cells["rouge_l"].state == "missing"


def test_the_owner_sees_a_private_submission(demo_dataset, board):
    _, rows = captioner_board(demo_dataset, viewer=board["owner"])
    assert "Private one" in [row.system.name for row in rows]


def test_downloads_carry_the_same_numbers(client, demo_dataset, board):
    data = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?sort=test_words&download=json").json()
    assert [s["name"] for s in data["systems"]][:2] == ["Long captions", "Broken"]
    assert data["systems"][0]["scores"]["test_words"] == {
        "value": 6.0, "low": 6.0, "high": 6.0,  # on the metric's own scale
        "points": 600.0, "low_points": 600.0, "high_points": 600.0,  # as the page shows them (×100)
        "state": "value", "rank": 1,  # the board is sorted by it
    }  # fmt: skip
    assert data["systems"][0]["paper_url"] == "https://example.org/paper"
    response = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=csv")
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    short = {row["name"]: row for row in table}["Short captions"]
    # As the page shows it (×points) with the interval's ends as columns of their own.
    assert (short["test_words"], short["test_words_low"], short["test_words_high"]) == ("200.0", "200.0", "200.0")
    assert {row["name"]: row["test_words"] for row in table}["Long captions"] == "600.0"  # JSON: 6.0 and 600.0


def test_method_names_are_escaped(client, demo_dataset, settings):
    submit(
        UserFactory(username="mallory"),
        demo_dataset,
        "<script>alert('x')</script>",
        caption=words(2),
        metrics=["test_words"],
        plan=True,
    )
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page


def test_metric_board_by_protocol_and_filters(client, demo_dataset):
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["bleu_4", "test_words"]))
    headers, rows = metric_board(protocol_name="paper")
    assert {(h[1], h[2]) for h in headers} == {("overall", "tau_b"), ("overall", "tau_c")}
    assert [row.column.slug for row in rows] == ["bleu_4", "test_words"]
    assert [row.column.slug for row in metric_board(protocol_name="paper", family="ngram")[1]] == ["bleu_4"]
    canonical_headers, _ = metric_board(protocol_name="canonical")
    assert {h[2] for h in canonical_headers} == {"tau_b", "tau_c", "pearson", "spearman"}
    assert [row.column.slug for row in metric_board(protocol_name="paper", reference="free")[1]] == ["test_words"]
    page = client.get("/metrics/?protocol=canonical").content.decode()
    assert "BLEU-4" in page
    assert "spearman" in page
    assert "paper 30.8" not in page
    bleu = next(row for row in rows if row.column.slug == "bleu_4")
    # The demo is a 100-image slice: the papers' full-dataset numbers are not put beside it.
    assert bleu.published == [None, None]
    assert "paper 30.8" not in client.get("/metrics/").content.decode()
    assert Submission.objects.count() == 0


def test_metric_detail_page_has_its_charts_and_serves_plotly_itself(client, demo_dataset):
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["rouge_l"]))
    page = client.get("/metrics/rouge_l/").content.decode()
    for chart in ("scatter", "heatmap", "distribution"):
        assert f'id="chart-{chart}"' in page
        assert f'<script id="{chart}" type="application/json">' in page
    # No script from elsewhere (a bare "cdn" may well occur in plotly's base64-packed chart data).
    assert 'data-plotly="/static/plotly/plotly.min.js"' in page
    assert "cdn.plot.ly" not in page
    assert not re.search(r"""<script[^>]+src=["']?(?:https?:)?//""", page)
    assert "Flickr8k-Expert · paper protocol (v1)" in page
    assert "Kendall τ-c" in page  # labels, not keys
    assert "<code>flickr8k-expert/paper@1</code>" in page  # the key itself under "Technical details"
    # Its figures are read from every score and judgment of the dataset once per change of the
    # results, not per request: the next request reads no score at all.
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/metrics/rouge_l/").content.decode() == page
    assert not [q for q in queries if '"scoring_score"' in q["sql"]]
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["bleu_4"]))  # new results: the figures are read again
    with CaptureQueriesContext(connection) as queries:
        client.get("/metrics/rouge_l/")
    assert [q for q in queries if '"scoring_score"' in q["sql"]]


def test_metric_page_shows_our_implementation_choices_and_configuration(client, db):
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    page = client.get("/metrics/polos/").content.decode()
    assert "How CapBench computes it" in page
    assert "one sentence&#x27;s own tokens" in page
    assert "&quot;layer_norm_scope&quot;: &quot;sentence&quot;" in page
    # Why it is unavailable in plain words; the server's own reason (the model store's path) for staff.
    assert "Not available on this server yet" in page
    assert "polos/reprod.ckpt is not in" not in page
    client.force_login(UserFactory(username="staffer", is_staff=True))
    assert "polos/reprod.ckpt is not in the model store" in client.get("/metrics/polos/").content.decode()
    assert "model store" in client.get("/api/v1/metrics/polos/").json()["unavailable_reason"]
    client.logout()
    assert client.get("/api/v1/metrics/polos/").json()["unavailable_reason"].startswith("not available on this")
    api = client.get("/api/v1/metrics/polos/").json()
    assert api["config"]["layer_norm_scope"] == "sentence"
    assert len(api["notes"]) == 2


def test_heatmap_rows_are_shares_of_each_human_rating():
    import numpy as np

    from leaderboards.charts import heatmap
    from leaderboards.metric_page import MetricOnDataset

    human = np.array([1, 1, 1, 1, 2, 2, 2, 2], dtype=float)
    metric = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    figure = json.loads(heatmap(MetricOnDataset("M", human, metric, metric, 0)))
    rows = figure["data"][0]["z"]
    assert [round(sum(row), 9) for row in rows] == [1.0, 1.0]
    assert rows[0][0] > 0
    assert rows[0][-1] == 0
    assert rows[1][-1] > 0  # low ratings in low bins, high in high


def test_the_board_follows_visibility_changes(demo_dataset, board):
    from catalog.uploads.services import upload_visibility_set, upload_withdraw
    from submissions.services import SUBMISSIONS

    hidden, shown = board["hidden"], board["long"]
    upload_visibility_set(upload=Submission.objects.get(pk=hidden.pk), is_public=True, kind=SUBMISSIONS)
    assert "Private one" in [row.system.name for row in captioner_board(demo_dataset)[1]]
    upload_withdraw(upload=Submission.objects.get(pk=shown.pk), kind=SUBMISSIONS)
    names = [row.system.name for row in captioner_board(demo_dataset, viewer=board["owner"])[1]]
    assert "Long captions" not in names  # withdrawn: off the board, even for its owner


def test_significance_clusters_on_the_board_and_the_p_value_matrix(client, demo_dataset):
    from scoring.models import SignificanceResult

    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["bleu_1", "cider_d", "rouge_l"]))
    column = SignificanceResult.objects.get(dataset=demo_dataset, protocol="flickr8k-expert/paper@1", statistic="tau_c")
    assert len(column.metrics) == 3
    assert column.values == sorted(column.values, reverse=True)
    assert column.ranks[0] == 1
    assert column.p_values[0][1] is not None
    assert column.p_values[1][0] is None
    _, rows = metric_board(protocol_name="paper")
    ranks = {row.column.slug: [r for r in row.ranks if r is not None] for row in rows}
    assert ranks[column.metrics[0]][0] == 1
    page = client.get("/metrics/").content.decode()
    assert 'class="rank"' in page
    assert "#1</a>" in page
    detail = client.get(
        f"/datasets/{demo_dataset.slug}/significance/",
        {"protocol": "flickr8k-expert/paper@1", "dimension": "overall", "statistic": "tau_c"},
    ).content.decode()
    assert detail.count("<tr>") == 4
    assert "CIDEr-D" in detail
    assert "ROUGE-L" in detail
    from scoring.models import CorrelationResult

    cell = CorrelationResult.objects.get(
        dataset=demo_dataset,
        protocol="flickr8k-expert/paper@1",
        statistic="tau_c",
        metric_version__metric__slug="cider_d",
    )
    assert f"[{100 * cell.low:.1f}, {100 * cell.high:.1f}]" in detail  # each value with its interval, as on the board


def test_every_number_has_its_interval(client, demo_dataset, board):
    _, rows = captioner_board(demo_dataset)
    words = next(row for row in rows if row.system.name == "Long captions").cells["test_words"]
    assert words.low == words.value == words.high == 6.0  # every caption has six words: no spread
    data = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=json").json()
    long_scores = next(s for s in data["systems"] if s["name"] == "Long captions")["scores"]
    assert long_scores["test_words"]["low"] == 6.0
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/").content.decode()
    # ×100 (the metric's points) with the interval in small text under the value, not in a tooltip.
    assert (
        '<td class="num state-value" data-metric="test_words">600.0<small class="interval">600.0–600.0</small>' in page
    )
