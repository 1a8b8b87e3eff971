"""The metric board answers its question: metrics ranked by agreement with people (the first
dataset's headline statistic by default, best first), sortable by any column through `?sort=` and
`?order=` (made-up values read as the default on the page, a 400 on the API, never a 500), the
papers' number beside ours, and the API's rows in the page's order. Results are stored as a
finished job writes them (CorrelationResult, SignificanceResult); nothing is mocked."""

from __future__ import annotations

import re

import pytest

from catalog.models import Dataset
from leaderboards.metric_board import (
    BY_NAME,
    MetricBoardQuery,
    UnknownSort,
    metric_board_page,
    metric_board_query,
    resolve_sort,
)
from leaderboards.significance import significance_page
from scoring.models import CorrelationResult, Metric, SignificanceResult
from scoring.services.metrics import metrics_sync

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]

# tau_c is Flickr8k-Expert's headline statistic under its paper protocol (evaluation/capbench_eval/metaeval/protocols.py).
FLICKR = {  # metric -> (tau_c, tau_b); SPICE has no tau_c
    "bleu_4": (0.30, 0.60),
    "cider_d": (0.50, 0.20),
    "meteor": (0.40, 0.40),
    "spice": (None, 0.50),
}
POLARIS = {"bleu_4": (0.90, 0.10), "cider_d": (0.10, 0.90)}
FLICKR_ROWS = 16992  # the rows the papers' Kendall table is over (evaluation/capbench_eval/metaeval/published.py)
TAU_B = "flickr8k-expert:overall:tau_b"


def store(dataset: Dataset, protocol: str, values: dict, *, n: int = 500) -> None:
    for slug, pair in values.items():
        version = Metric.objects.get(slug=slug).current_version
        for statistic, value in zip(("tau_c", "tau_b"), pair, strict=True):
            CorrelationResult.objects.create(
                metric_version=version,
                dataset=dataset,
                dimension="overall",
                statistic=statistic,
                protocol=f"{protocol}/paper@1",
                protocol_name="paper",
                protocol_version="1",
                value=value,
                low=None if value is None else value - 0.05,
                high=None if value is None else value + 0.05,
                n=n,
            )


@pytest.fixture
def board(db):
    metrics_sync()
    flickr = Dataset.objects.create(
        slug="flickr8k-expert", title="Flickr8k-Expert", source_format="flickr8k-expert", dimensions=["overall"]
    )
    polaris = Dataset.objects.create(slug="polaris", title="Polaris", source_format="polaris", dimensions=["overall"])
    store(flickr, "flickr8k-expert", FLICKR, n=FLICKR_ROWS)
    store(polaris, "polaris", POLARIS)
    return {"flickr": flickr, "polaris": polaris}


def page_order(html: str) -> list[str]:
    """The metrics in the table's order (each row's heading links the metric's page)."""
    body = html.split('id="metric-board"')[1].split("</tbody>")[0].split("<tbody>")[1]
    return re.findall(r'<th scope="row" class="metric"[^>]*><a href="/metrics/([\w-]+)/">', body)


def test_ranked_by_the_first_datasets_headline_statistic_best_first_not_by_name(client, board):
    page = metric_board_page(MetricBoardQuery("paper"))
    first = page.headers[0]
    assert (first.dataset.slug, first.statistic, first.headline) == ("flickr8k-expert", "tau_c", True)
    assert page.query.sort == "flickr8k-expert:overall:tau_c" and page.best_first
    # Best agreement first; SPICE has no tau_c and follows the ranked ones.
    assert [row.column.slug for row in page.rows] == ["cider_d", "meteor", "bleu_4", "spice"]
    html = client.get("/metrics/").content.decode()
    assert page_order(html) == ["cider_d", "meteor", "bleu_4", "spice"]
    ranked_by = html.split('id="ranked-by"')[1].split("</p>")[0]
    assert "Flickr8k-Expert · overall · " in ranked_by
    assert "best agreement first" in ranked_by
    # The sorted column says so; every column heading sorts; the metric names are links styled as such.
    headings = re.findall(r'<th scope="col"[^>]*aria-sort="(\w+)"', html)
    assert headings.count("descending") == 1
    assert headings.count("none") == len(page.headers)
    assert 'href="?protocol=paper&amp;level=caption&amp;sort=flickr8k-expert%3Aoverall%3Atau_b"' in html
    assert '<th scope="row" class="metric"' in html


def test_sorted_by_any_column_either_way_or_by_name(client, board):
    assert page_order(client.get("/metrics/", {"sort": TAU_B}).content.decode()) == [
        "bleu_4",
        "spice",
        "meteor",
        "cider_d",
    ]
    ascending = client.get("/metrics/", {"sort": TAU_B, "order": "asc"}).content.decode()
    assert page_order(ascending) == ["cider_d", "meteor", "spice", "bleu_4"]
    assert ascending.count('aria-sort="ascending"') == 1
    by_name = client.get("/metrics/", {"sort": BY_NAME, "order": "desc"}).content.decode()
    assert page_order(by_name) == ["spice", "meteor", "cider_d", "bleu_4"]
    # A dataset's slug: the column it is ranked by (its headline statistic).
    assert page_order(client.get("/metrics/", {"sort": "polaris"}).content.decode())[:2] == ["bleu_4", "cider_d"]


@pytest.mark.parametrize(
    "params",
    [
        {"sort": "nope"},
        {"sort": "flickr8k-expert:overall:nope"},
        {"sort": "x" * 5000},
        {"sort": "flickr8k-expert:overall:tau_b:x"},
        {"order": "sideways"},
        {"sort": "", "order": ""},
        {"sort": ["metric", "nope"]},  # (the last of a repeated parameter is the one read)
    ],
)
def test_a_made_up_sort_reads_as_the_default_on_the_page(client, board, params):
    response = client.get("/metrics/", params)
    assert response.status_code == 200
    assert page_order(response.content.decode()) == ["cider_d", "meteor", "bleu_4", "spice"]
    # The same table, kept once: a made-up value adds no entry and gets the default's validator.
    assert response["ETag"] == client.get("/metrics/")["ETag"]


def test_resolve_sort_is_strict_for_the_api():
    choices = {BY_NAME: BY_NAME, "polaris": "polaris:overall:tau_c", "polaris:overall:tau_c": "polaris:overall:tau_c"}
    query = metric_board_query({"sort": "polaris", "order": "desc"})
    assert resolve_sort(query, choices) == MetricBoardQuery("paper", sort="polaris:overall:tau_c", order=None)
    assert resolve_sort(MetricBoardQuery("paper"), choices).sort == "polaris:overall:tau_c"
    assert resolve_sort(MetricBoardQuery("paper", sort=BY_NAME, order="asc"), choices).order is None
    assert resolve_sort(MetricBoardQuery("paper", sort="nope"), choices).sort == "polaris:overall:tau_c"
    with pytest.raises(UnknownSort):
        resolve_sort(MetricBoardQuery("paper", sort="nope"), choices, strict=True)


def test_the_papers_number_beside_ours(client, board):
    html = client.get("/metrics/").content.decode()
    rows = dict(zip(page_order(html), html.split("<tbody>")[1].split("<tr>")[1:], strict=True))
    # BLEU-4's published Kendall tau-c on the same 16,992 rows is 30.8, its tau-b 30.6.
    assert "paper 30.8" in rows["bleu_4"]
    assert "paper 30.6" in rows["bleu_4"]
    assert "paper 43.9" in rows["cider_d"]
    api = client.get("/api/v1/leaderboards/metrics/").json()
    bleu = next(row for row in api["metrics"] if row["metric"] == "bleu_4")
    columns = [column["key"] for column in api["columns"]]
    assert bleu["cells"][columns.index("flickr8k-expert:overall:tau_c")]["published"] == 30.8
    assert "published" not in bleu["cells"][columns.index("polaris:overall:tau_c")]  # none reported for Polaris


def test_the_api_ranks_as_the_page_does(client, board):
    for params in ({}, {"sort": TAU_B}, {"sort": TAU_B, "order": "asc"}, {"sort": BY_NAME}, {"sort": "polaris"}):
        api = client.get("/api/v1/leaderboards/metrics/", params)
        assert api.status_code == 200, params
        page = client.get("/metrics/", params).content.decode()
        assert [row["metric"] for row in api.json()["metrics"]] == page_order(page), params
    data = client.get("/api/v1/leaderboards/metrics/", {"sort": TAU_B, "order": "asc"}).json()
    assert (data["sort"], data["order"]) == (TAU_B, "asc")
    assert client.get("/api/v1/leaderboards/metrics/").json()["sort"] == "flickr8k-expert:overall:tau_c"
    for bad in ("nope", "x" * 300, "flickr8k-expert:overall"):
        answer = client.get("/api/v1/leaderboards/metrics/", {"sort": bad})
        assert answer.status_code == 400 and "no column" in answer.json()["detail"], bad


def test_the_significance_page_opens_on_the_boards_default_column(client, board):
    flickr = board["flickr"]
    common = {"dataset": flickr, "level": "caption", "dimension": "overall", "alpha": 0.05, "p_values": [[None]]}
    for protocol, name, statistic in (
        ("flickr8k-expert/canonical@1", "canonical", "pearson"),  # first by name: the former default
        ("flickr8k-expert/paper@1", "paper", "tau_b"),
        ("flickr8k-expert/paper@1", "paper", "tau_c"),
        ("flickr8k-expert/paper@0", "paper", "tau_c"),  # an older protocol version's
    ):
        SignificanceResult.objects.create(
            protocol=protocol,
            protocol_name=name,
            statistic=statistic,
            metrics=["cider_d"],
            values=[0.5],
            ranks=[1],
            **common,
        )
    board_default = metric_board_page(MetricBoardQuery("paper", sort=flickr.slug)).sorted_header
    assert (board_default.protocol, board_default.statistic) == ("flickr8k-expert/paper@1", "tau_c")
    opened = significance_page(flickr, None, {}).result
    assert (opened.protocol, opened.dimension, opened.statistic) == (
        board_default.protocol,
        board_default.dimension,
        board_default.statistic,
    )
    chosen = {"protocol": board_default.protocol, "dimension": "overall", "statistic": "tau_c"}
    url = f"/datasets/{flickr.slug}/significance/"
    assert client.get(url).content == client.get(url, chosen).content  # the page itself opens there
    assert client.get(url).content != client.get(url, {**chosen, "statistic": "tau_b"}).content
