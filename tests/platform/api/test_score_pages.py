"""The scores API's pages at any size (docs/performance.md): read in caption order from indexes,
every score exactly once across cursors (the scores of one caption split over two pages too), and
a page's statements the same in number and shape whatever the table holds."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from catalog.models import Caption
from scoring.models import INPUT_KEY_BYTES, MetricVersion, Score
from scoring.services.batches import scores_write
from scoring.services.metrics import metrics_sync
from tests.platform.support.query_plans import plan_of

pytestmark = pytest.mark.django_db

SLUGS = ["bleu_1", "bleu_4", "rouge_l"]


@pytest.fixture
def scored(demo_dataset):
    metrics_sync()
    versions = list(MetricVersion.objects.filter(metric__slug__in=SLUGS, metric__current_version__isnull=False))
    captions = list(Caption.objects.filter(item__dataset=demo_dataset).order_by("id").values_list("pk", flat=True))
    scores_write(
        [
            Score(
                caption_id=caption,
                metric_version=version,
                value=0.5,
                input_key=(caption * 10 + n).to_bytes(INPUT_KEY_BYTES, "big"),
            )
            for caption in captions
            for n, version in enumerate(versions)
        ]
    )
    return demo_dataset


def walk(client, query: dict) -> tuple[list[dict], list[int]]:
    """Every page from the first, following `next`; the rows and each page's statement count."""
    rows, counts = [], []
    url, params = "/api/v1/scores/", query
    while url:
        with CaptureQueriesContext(connection) as queries:
            body = client.get(url, params).json()
        rows += body["results"]
        counts.append(len(queries))
        url, params = body["next"], None
    return rows, counts


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_pages_give_every_score_once_in_caption_order_and_cost_the_same(scored):
    client = APIClient()
    rows, counts = walk(client, {"dataset": scored.slug, "page_size": 7})
    expected = Score.objects.filter(caption__item__dataset=scored, caption__system__submission__isnull=True)
    assert sorted(row["id"] for row in rows) == sorted(expected.values_list("id", flat=True))
    order = [(row["caption_id"], row["metric"]) for row in rows]
    assert order == sorted(order)  # captions in order; a caption's scores in version order
    assert len({(row["caption_id"], row["metric"]) for row in rows}) == len(rows)
    assert len(set(counts)) == 1, counts  # the first page and every other: the same statements


def test_a_system_or_metric_filter_pages_the_same_way(scored):
    client = APIClient()
    system = Caption.objects.filter(item__dataset=scored).values_list("system__slug", flat=True).first()
    rows, _ = walk(client, {"dataset": scored.slug, "system": system, "metric": "bleu_4", "page_size": 9})
    expected = Score.objects.filter(caption__system__slug=system, metric_version__metric__slug="bleu_4")
    assert sorted(row["id"] for row in rows) == sorted(expected.values_list("id", flat=True))
    assert {row["system"] for row in rows} == {system}
    assert {row["metric"] for row in rows} == {"bleu_4"}
    assert walk(client, {"dataset": "no-such-dataset"})[0] == []


def page_statement(client, query: dict) -> str:
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/api/v1/scores/", query).status_code == 200
    [statement] = [q["sql"] for q in queries if q["sql"].startswith('SELECT "scoring_score"."id"')]
    return statement


@pytest.mark.parametrize(
    "query",
    [{"dataset": "demo"}, {"dataset": "demo", "metric": "bleu_4"}, {"dataset": "demo", "system": "__first__"}],
)
def test_a_page_is_read_in_caption_order_from_the_filtered_captions_first_one(scored, query):
    """The plan's shape, which must not change: scores come from score_unique in caption order,
    starting at the filtered captions' first id (the statement carries the bounds), with at most an
    incremental sort of one caption's few scores, never a sort of everything the filter matches
    (what made a page cost seconds at ten million scores)."""
    if query.get("system") == "__first__":
        query["system"] = Caption.objects.filter(item__dataset=scored).values_list("system__slug", flat=True).first()
    statement = page_statement(APIClient(), {**query, "page_size": 5})
    assert '"scoring_score"."caption_id" >=' in statement
    assert '"scoring_score"."caption_id" <=' in statement
    plan = plan_of(statement)
    assert "score_unique" in plan, plan
    sorts = [line.strip() for line in plan.splitlines() if "Sort" in line and "Sort Key" not in line]
    assert all(line.startswith(("->  Incremental Sort", "Incremental Sort")) for line in sorts), plan


def test_the_wide_layout_gives_a_row_per_caption_with_its_metrics_as_keys(scored):
    client = APIClient()
    rows, counts = walk(client, {"dataset": scored.slug, "layout": "wide", "page_size": 7})
    own = Caption.objects.filter(item__dataset=scored, system__submission__isnull=True).order_by("id")
    assert [row["caption_id"] for row in rows] == list(own.values_list("pk", flat=True))  # each caption once
    assert all(set(row["scores"]) == set(SLUGS) for row in rows)
    assert rows[0]["scores"]["rouge_l"] == {"value": 0.5, "points": 50.0, "error": ""}
    assert len(set(counts[:-1])) == 1  # a page costs the same wherever it is
    only = client.get("/api/v1/scores/", {"dataset": scored.slug, "layout": "wide", "metric": "bleu_4"}).json()
    assert len(only["results"]) == 100
    assert {key for row in only["results"] for key in row["scores"]} == {"bleu_4"}
    assert client.get("/api/v1/scores/", {"layout": "sideways"}).status_code == 400
    assert client.get("/api/v1/scores/", {"dataset": "no-such", "layout": "wide"}).json()["results"] == []
    assert "metric" in client.get("/api/v1/scores/", {"dataset": scored.slug}).json()["results"][0]  # long: as before


def test_a_page_leaves_the_rest_of_a_longer_transaction_planned_as_usual(scored):
    """The page plans its query without sorts (SET LOCAL), inside a savepoint when a transaction is
    already open (this test's, or a request's): the setting must not outlive the page, or every
    later query of that transaction is planned at a disabled node's cost and JIT-compiled."""
    APIClient().get("/api/v1/scores/", {"dataset": scored.slug, "page_size": 7})
    with connection.cursor() as cursor:
        cursor.execute("SHOW enable_sort")
        assert cursor.fetchone()[0] == "on"
