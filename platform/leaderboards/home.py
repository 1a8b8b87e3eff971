"""The home page as one model (HomePage): what is best on CapBench, read from the boards' own page
models, never recomputed. Per public dataset whose board ranks two systems or more its top systems by the captioner board's
default column, each number in points with its interval as that board shows it (the board's
CaptionerBoardPage for an anonymous viewer); per public meta-evaluation set its top metrics by the
metric board's default ranking (MetricBoardPage sorted by the dataset); the latest public
submissions; then the datasets table, as the viewer may see it.

Everything but the datasets table is what anyone may see (catalog/visibility.py read for no
viewer): a private or withdrawn submission, a hidden dataset or a private metric never appears there,
whoever is signed in."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from urllib.parse import urlencode

from catalog.models import Dataset
from catalog.selectors import datasets_by_purpose
from leaderboards.caching import kept_fragment
from leaderboards.captioner import Cell, captioner_board_page
from leaderboards.metric_board import (
    PROTOCOLS,
    MetricBoardQuery,
    metric_board_of,
    metric_board_page,
    metric_board_version,
)
from submissions.models import Submission

TOP = 3  # systems and metrics shown per dataset
RECENT = 5  # latest public submissions shown


@dataclass(frozen=True)
class BestSystem:
    rank: int
    name: str
    slug: str
    cell: Cell  # the board's cell: value, interval and points scale as the board shows them


@dataclass(frozen=True)
class BestSystems:
    """A captioner benchmark's top systems by its board's default column (`column`, its name)."""

    dataset: Dataset
    column: str
    goodness: str  # "higher is better" / "lower is better"
    systems: list[BestSystem]


@dataclass(frozen=True)
class BestMetric:
    position: int  # 1 = the best agreement
    slug: str
    name: str
    value: float  # the correlation (or accuracy), native: the board shows it ×100
    low: float | None
    high: float | None
    cluster: int | None  # its significance cluster in the column (1 = best)
    published: float | None  # the papers' number (×100) for the same rows, where known


@dataclass(frozen=True)
class BestMetrics:
    """A meta-evaluation set's top metrics by the column the metric board ranks it by."""

    dataset: str  # slug
    title: str
    protocol: str  # the metric board's protocol family the column is in
    dimension: str
    statistic: str
    query: str  # the metric board's query string ranking it by this dataset's column
    metrics: list[BestMetric] = field(default_factory=list)


@dataclass(frozen=True)
class RecentSubmission:
    dataset: Dataset
    system_slug: str
    method: str
    created_at: object  # a datetime
    status: str


@dataclass
class HomePage:
    systems: list[BestSystems]
    metrics: list[BestMetrics]
    recent: list[RecentSubmission]
    benchmarks: list[Dataset]  # the datasets table, as the viewer may see it
    meta_sets: list[Dataset]
    staff: bool = False


def home_page(viewer) -> HomePage:
    datasets = datasets_by_purpose(viewer=viewer)
    public = list(Dataset.objects.visible_to(None).order_by("title"))
    return HomePage(
        # Every public dataset whose board ranks systems: a meta-evaluation set with real systems
        # (THumB's five) has a captioner board too.
        systems=[found for dataset in public if (found := best_systems(dataset))],
        metrics=best_metrics([dataset for dataset in public if not dataset.is_benchmark]),
        recent=recent_submissions(),
        benchmarks=datasets["benchmarks"],
        meta_sets=datasets["meta_sets"],
        staff=bool(getattr(viewer, "is_staff", False)),
    )


def best_systems(dataset: Dataset) -> BestSystems | None:
    """The top systems of the dataset's board as anyone sees it, by its default column (None when
    fewer than two systems have a number there: one system is no ranking)."""
    page = captioner_board_page(dataset, {}, viewer=None)
    if page.sort is None:
        return None
    top = [
        BestSystem(row.rank, row.system.name, row.system.slug, cell)
        for row in page.rows[:TOP]
        if row.rank is not None and (cell := row.cell(page.sort)) is not None
    ]
    goodness = "higher is better" if page.higher_is_better(page.sort) else "lower is better"
    return BestSystems(dataset, page.sort_name, goodness, top) if len(top) >= 2 else None


def best_metrics(datasets: list[Dataset]) -> list[BestMetrics]:
    """Per dataset, the metric board's top metrics when it is ranked by that dataset (the paper
    protocol's board, else the canonical one's: a pairwise set has no paper protocol here), as
    everyone sees it. Kept under the board's version, as the board's own table is."""
    slugs = [dataset.slug for dataset in datasets]

    def build() -> str:
        return json.dumps([asdict(found) for found in _best_metrics(slugs)])

    kept, _ = kept_fragment("home-metrics", metric_board_version().key, slugs, build)
    return [
        BestMetrics(**{**found, "metrics": [BestMetric(**metric) for metric in found["metrics"]]})
        for found in json.loads(kept)
    ]


def _best_metrics(slugs: list[str]) -> list[BestMetrics]:
    boards = {}
    shown = []
    for slug in slugs:
        for protocol in PROTOCOLS[:2]:
            query = MetricBoardQuery(protocol)
            if protocol not in boards:
                boards[protocol] = metric_board_of(query)
            found = _ranked_by(replace(query, sort=slug), boards[protocol])
            if found is not None:
                shown += [found] if found.metrics else []
                break
    return shown


def _ranked_by(query: MetricBoardQuery, board) -> BestMetrics | None:
    """The board sorted by `query.sort` (a dataset's slug: its default column), its top metrics;
    None where the board has no column of that dataset."""
    page = metric_board_page(query, board=board)
    header = page.sorted_header
    if header is None or header.dataset.slug != query.sort:
        return None
    index = page.headers.index(header)
    metrics: list[BestMetric] = []
    for row in page.rows[:TOP]:
        result = row.values[index]
        if result is None or result.value is None:
            break
        metrics.append(
            BestMetric(
                len(metrics) + 1,
                row.column.slug,
                row.column.name,
                result.value,
                result.low,
                result.high,
                row.ranks[index],
                row.published[index],
            )
        )
    return BestMetrics(
        header.dataset.slug,
        header.dataset.title,
        query.protocol,
        header.dimension,
        header.statistic,
        urlencode({"protocol": query.protocol, "sort": header.param}),
        metrics,
    )


def recent_submissions() -> list[RecentSubmission]:
    """The latest submissions anyone may see, on datasets anyone may see."""
    found = (
        Submission.objects.visible_to(None)
        .filter(dataset__in=Dataset.objects.visible_to(None))
        .select_related("dataset", "system")
        .order_by("-created_at", "-pk")[:RECENT]
    )
    return [
        RecentSubmission(s.dataset, s.system.slug, s.method_name, s.created_at, s.get_status_display()) for s in found
    ]
