"""The boards as plain tables: captioner boards (systems × metrics) and the meta-evaluation board
(metrics × datasets), with sorting in which missing and failed values always come last."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from django.contrib.auth.models import AnonymousUser
from django.contrib.postgres.aggregates import ArrayAgg
from django.db import connection
from django.db.models import F, OuterRef, QuerySet, Subquery

from campaigns.models import Campaign
from campaigns.selectors import campaign_of_protocol
from catalog.models import Caption, Dataset, Judgment, System
from catalog.visibility import references_visible
from evaluation.metaeval.published import published_value
from leaderboards.columns import Column, metric_board_columns
from leaderboards.snapshots import board_payload
from scoring.models import (
    CorrelationResult,
    EvaluationJob,
    Metric,
    MetricVersion,
    ResultsRevision,
    Score,
    SignificanceResult,
)
from workbench.models import MetricSubmission


@dataclass
class Cell:
    value: float | None = None
    state: str = "missing"  # value | missing | queued | running | failed | unavailable
    note: str = ""
    rank: int | None = None
    low: float | None = None  # 95% interval where defined (metrics whose number is a mean)
    high: float | None = None

    @property
    def sort_value(self) -> float | None:
        """The value when it can be sorted: None when missing or NaN."""
        return None if self.value is None or math.isnan(self.value) else self.value

    @property
    def sortable(self) -> bool:
        return self.sort_value is not None


@dataclass(frozen=True)
class SystemInfo:
    id: int
    slug: str
    name: str
    kind: str
    is_baseline: bool


@dataclass(frozen=True)
class SubmissionInfo:
    id: int
    paper_url: str
    code_url: str
    is_public: bool
    owner_id: int


@dataclass
class BoardRow:
    system: SystemInfo
    cells: dict[str, Cell] = field(default_factory=dict)
    submission: SubmissionInfo | None = None
    people: Cell | None = None  # the mean human rating of its captions, where the dataset has them
    rank: int | None = None  # by the sorted column's goodness (1 = best; ties share), None without a value

    def cell(self, key: str) -> Cell | None:
        return self.people if key == PEOPLE else self.cells.get(key)


PEOPLE = "people"  # the sort key of the people column (no metric has this slug: metric slugs are the registry's)
FILTERS = ("baseline", "paper", "code")  # the board's system filters (?only=…)


# The metric board's protocol families, "paper" first (the default); "live": the live campaigns'
# correlations (each campaign a protocol of its own, campaigns.models.Campaign.protocol_key).
PROTOCOLS = ("paper", "canonical", "live")
LEVELS = ("caption", "system")  # the metric board's levels, "caption" first (the default)
REFERENCES = ("free", "based")  # the metric board's filter on reference use


class UnknownProtocol(ValueError):
    def __init__(self, protocol: str):
        super().__init__(f"no protocol {protocol!r} ({', '.join(PROTOCOLS[:-1])} or {PROTOCOLS[-1]})")


class UnknownFamily(ValueError):
    def __init__(self, family: str):
        super().__init__(f"no metric family {family!r}")


@dataclass(frozen=True)
class MetricBoardQuery:
    protocol: str
    level: str = LEVELS[0]
    family: str | None = None
    reference: str | None = None


def metric_board_query(params, *, strict: bool = False, families: AbstractSet[str] | None = None) -> MetricBoardQuery:
    """The metric board's query string as the page and the API read it:
    `?protocol=paper|canonical|live&level=caption|system&family=<family>&reference=free|based`. Another
    level reads as "caption", another reference as none; another protocol as "paper", or (`strict`,
    the API) UnknownProtocol; a family not among `families` (the registered metrics') as none, or
    (`strict`) UnknownFamily."""
    protocol = params.get("protocol", PROTOCOLS[0])
    if protocol not in PROTOCOLS:
        if strict:
            raise UnknownProtocol(protocol)
        protocol = PROTOCOLS[0]
    level = params.get("level") if params.get("level") in LEVELS else LEVELS[0]
    reference = params.get("reference") if params.get("reference") in REFERENCES else None
    family = params.get("family") or None
    if families is not None and family is not None and family not in families:
        if strict:
            raise UnknownFamily(family)
        family = None
    return MetricBoardQuery(protocol, level, family, reference)


@dataclass(frozen=True)
class CaptionerBoardQuery:
    sort: str | None = None  # a column's slug or PEOPLE; None: the dataset's headline metric
    descending: bool | None = None  # None: each column's goodness (best first)
    search: str = ""  # part of a system's name
    only: str | None = None  # one of FILTERS


def captioner_board_params(params) -> CaptionerBoardQuery:
    """The captioner board's query string as the page and the API read it: `?sort=<metric slug or
    people>&order=asc|desc&q=<part of a name>&only=baseline|paper|code`. Another order reads as
    none (best first), another filter as none."""
    order = params.get("order")
    return CaptionerBoardQuery(
        sort=params.get("sort") or None,
        descending=None if order not in ("asc", "desc") else order == "desc",
        search=(params.get("q") or "").strip()[:100],
        only=params.get("only") if params.get("only") in FILTERS else None,
    )


def captioner_board_query(
    dataset: Dataset, params, *, viewer=None, visible: AbstractSet[int] | None = None, payload: dict | None = None
) -> tuple[list[Column], list[BoardRow]]:
    """The captioner board as the page and the API read it from the query string
    (captioner_board_params)."""
    found = captioner_board_shown(dataset, params, viewer=viewer, visible=visible, payload=payload)
    return found.columns, found.rows


@dataclass(frozen=True)
class ShownBoard:
    columns: list[Column]
    rows: list[BoardRow]
    sort: str | None  # the key the rows are ranked by (board_sort, over every visible row)


def captioner_board_shown(
    dataset: Dataset, params, *, viewer=None, visible: AbstractSet[int] | None = None, payload: dict | None = None
) -> ShownBoard:
    """captioner_board_query with the key the board is ranked by (what the page marks)."""
    query = captioner_board_params(params)
    keys: list[str | None] = []
    columns, rows = captioner_board(
        dataset,
        sort=query.sort,
        descending=query.descending,
        viewer=viewer,
        visible=visible,
        payload=payload,
        search=query.search,
        only=query.only,
        sorted_by=keys,
    )
    return ShownBoard(columns, rows, keys[0] if keys else None)


@dataclass(frozen=True)
class BoardRequestState:
    """What a board request's validator is made from, read live in one query."""

    dataset: Dataset
    version: str | None  # when the snapshot was built (ISO text): None while the dataset has none
    visible: frozenset[int]  # systems_visible(dataset, viewer)
    digests: dict  # the snapshot's snapshots.payload_digests ({} when it has none yet)


def board_request_state(slug: str, viewer) -> BoardRequestState:
    """The dataset `viewer` may see by `slug` (Dataset.DoesNotExist otherwise), its snapshot's
    version and digests, and the ids of its systems `viewer` may see (catalog.visibility): one
    query, the same rules as Dataset.objects.visible_to and systems_visible. For an anonymous viewer
    the query's SQL is built once per process (_anonymous_board_sql)."""
    if viewer is None or not viewer.is_authenticated:
        sql, params, at = _anonymous_board_sql()
        found = list(Dataset.objects.raw(sql, [*params[:at], slug, *params[at + 1 :]]))
    else:
        found = list(_board_state_queryset(slug, viewer)[:1])
    if not found:
        raise Dataset.DoesNotExist(slug)
    dataset = found[0]
    computed = dataset.board_computed_at  # type: ignore[attr-defined]  # (annotations)
    ids = dataset.visible_ids  # type: ignore[attr-defined]
    digests = dataset.board_digests or {}  # type: ignore[attr-defined]
    if isinstance(digests, str):  # (a raw query's JSON column comes as text)
        digests = json.loads(digests)
    return BoardRequestState(dataset, None if computed is None else computed.isoformat(), frozenset(ids or ()), digests)


def _board_state_queryset(slug: str, viewer) -> QuerySet[Dataset]:
    visible = (
        System.objects.visible_to(viewer)
        .filter(dataset=OuterRef("pk"))
        .order_by()
        .values("dataset")
        .annotate(ids=ArrayAgg("id"))
        .values("ids")
    )
    return (
        Dataset.objects.visible_to(viewer)
        .annotate(
            board_computed_at=F("board_snapshot__computed_at"),
            board_digests=F("board_snapshot__digests"),
            visible_ids=Subquery(visible),
        )
        .filter(slug=slug)
        .order_by()
    )


_SLUG = "\x00slug\x00"  # stands for the slug while the SQL is built (no real slug holds a NUL)


@functools.cache
def _anonymous_board_sql() -> tuple[str, tuple, int]:
    """board_request_state's query for an anonymous viewer, as Django builds it from the visibility
    rule: its SQL, its parameters and where the slug goes among them. Building it costs more than
    running it; it is the same for every anonymous request."""
    sql, params = _board_state_queryset(_SLUG, AnonymousUser()).query.sql_with_params()
    if list(params).count(_SLUG) != 1:
        raise RuntimeError("the board query's slug parameter could not be located")
    return sql, tuple(params), list(params).index(_SLUG)


def systems_visible(dataset: Dataset, viewer) -> set[int]:
    """Ids of the dataset's systems `viewer` may see (catalog.visibility, read live)."""
    return set(System.objects.visible_to(viewer).filter(dataset=dataset).order_by().values_list("id", flat=True))


def captioner_board(
    dataset: Dataset,
    *,
    sort: str | None = None,
    descending: bool | None = None,
    viewer=None,
    visible: AbstractSet[int] | None = None,
    payload: dict | None = None,
    search: str = "",
    only: str | None = None,
    sorted_by: list[str | None] | None = None,
) -> tuple[list[Column], list[BoardRow]]:
    """The board from the dataset's precomputed snapshot (`payload`, when the caller has read it),
    keeping the systems `viewer` may see (catalog.visibility, read live: a change of visibility
    shows at once; `visible`: those ids, when the caller has already read them for the same viewer)
    whose name holds `search` and that pass the filter `only`, sorted by `sort` (default: the
    dataset's headline metric, else the first column with a number) with ranks by goodness:
    `descending` against the column's direction lists the worst first, still ranked from the best.
    `sorted_by`: a list the key used is appended to."""
    if payload is None:
        payload = board_payload(dataset)
    columns = [Column(**column) for column in payload["columns"]]
    if visible is None:
        visible = systems_visible(dataset, viewer)
    ordered = []
    # A hidden test set's human ratings are for staff only, its systems' mean ratings too (catalog.visibility);
    # a live campaign's are public, as on its own page (campaigns.selectors.campaign_results).
    ratings_shown = references_visible(dataset, viewer) or bool(payload.get("people_campaign"))
    for row in payload["rows"]:
        if row["system"]["id"] not in visible:
            continue
        submission = SubmissionInfo(**row["submission"]) if row["submission"] else None
        cells = {slug: Cell(**cell) for slug, cell in row["cells"].items()}
        people = Cell(**row["people"]) if row.get("people") and ratings_shown else None
        ordered.append(BoardRow(SystemInfo(**row["system"]), cells, submission, people))
    # Sorted and ranked among every system the viewer sees, then searched and filtered: a system
    # found by its name keeps its place on the whole board.
    key = board_sort(dataset, columns, ordered, sort)
    if sorted_by is not None:
        sorted_by.append(key)
    if key is not None:
        better = True if key == PEOPLE else next(c.higher_is_better for c in columns if c.slug == key)
        ordered = sort_rows(ordered, key, better)
        rank_rows(ordered, key)
        if descending is not None and descending != better:  # the worst first; ranks stay by goodness
            valued = [row for row in ordered if row.rank is not None]
            valued.sort(key=lambda row: (-(row.rank or 0), row.system.name.lower()))  # ties still in name order
            ordered = valued + ordered[len(valued) :]
    return columns, [row for row in ordered if _passes(row, search.casefold(), only)]


def _passes(row: BoardRow, needle: str, only: str | None) -> bool:
    """Whether a row's system name holds `needle` and it passes the filter `only` (FILTERS)."""
    if needle and needle not in row.system.name.casefold():
        return False
    if only == "baseline":
        return row.system.is_baseline
    if only in ("paper", "code"):
        return bool(row.submission and getattr(row.submission, f"{only}_url"))
    return True


def board_sort(dataset: Dataset, columns: list[Column], rows: list[BoardRow], sort: str | None) -> str | None:
    """The key a board is sorted by: `sort` when it names a column (or the people column where the
    rows have one), else the dataset's headline metric when a row has a number for it, else the
    first column with a number; None when no row has any."""
    slugs = [c.slug for c in columns]
    has_people = any(row.people is not None for row in rows)
    if sort in slugs or sort == PEOPLE and has_people:
        return sort
    valued = [slug for slug in slugs if any(row.cells[slug].sortable for row in rows)]
    if dataset.headline_metric in valued:
        return dataset.headline_metric
    return valued[0] if valued else None


def sort_rows(rows: list[BoardRow], key: str, descending: bool) -> list[BoardRow]:
    """Values in order; then every row without a value (failed, missing, running) in name order."""
    keyed = [(cell.sort_value if (cell := row.cell(key)) else None, row) for row in rows]
    valued = [(value, row) for value, row in keyed if value is not None]
    rest = [row for value, row in keyed if value is None]
    valued.sort(key=lambda pair: (-pair[0] if descending else pair[0], pair[1].system.name.lower()))
    return [row for _, row in valued] + sorted(rest, key=lambda row: row.system.name.lower())


def rank_rows(rows: list[BoardRow], key: str) -> None:
    """Standard competition ranking (1, 2, 2, 4) of the rows (sorted best first) that have a value
    under `key`; others get none."""
    previous, rank = None, 0
    for position, row in enumerate(rows, start=1):
        cell = row.cell(key)
        if cell is None or not cell.sortable:
            row.rank = None
            continue
        if cell.value != previous:
            rank, previous = position, cell.value
        row.rank = rank
        if key != PEOPLE:
            cell.rank = rank


@dataclass(frozen=True)
class ColumnGroup:
    family: str
    columns: list[Column]


def column_groups(
    columns: list[Column], rows: list[BoardRow], *, keep: str | None = None
) -> tuple[list[ColumnGroup], list[Column]]:
    """The columns the board shows first, grouped by family (families in name order), and those
    with no number on any of `rows` (unavailable, failed or not scored), shown only when asked;
    `keep` (the sorted column) is shown first whatever it holds."""
    shown: dict[str, list[Column]] = {}
    empty = []
    for column in sorted(columns, key=lambda c: (c.family, c.name.lower())):
        if column.slug == keep or any(row.cells[column.slug].state == "value" for row in rows):
            shown.setdefault(column.family, []).append(column)
        else:
            empty.append(column)
    return [ColumnGroup(family, found) for family, found in shown.items()], empty


ColumnKey = tuple[int, str, str, str]  # a metric board column: (dataset id, protocol key, dimension, statistic)


class MetricBoardHeader(NamedTuple):
    """A metric board column: its dataset, dimension and statistic under one protocol (its key);
    a live column's campaign (None otherwise)."""

    dataset: Dataset
    dimension: str
    statistic: str
    protocol: str
    campaign: Campaign | None = None

    @property
    def key(self) -> ColumnKey:
        return (self.dataset.pk, self.protocol, self.dimension, self.statistic)


@dataclass
class MetricBoardRow:
    column: Column
    cells: dict[ColumnKey, CorrelationResult] = field(default_factory=dict)
    values: list[CorrelationResult | None] = field(default_factory=list)  # aligned with the headers
    published: list[float | None] = field(default_factory=list)  # the papers' numbers (×100), same order

    ranks: list[int | None] = field(default_factory=list)  # significance cluster per column, same order

    @property
    def cells_and_published(self) -> list[tuple[CorrelationResult | None, float | None, int | None]]:
        return list(zip(self.values, self.published, self.ranks, strict=True))


def metric_board(
    *,
    protocol_name: str,
    level: str = "caption",
    family: str | None = None,
    reference: str | None = None,
    extra: AbstractSet[str] = frozenset(),
) -> tuple[list[MetricBoardHeader], list[MetricBoardRow]]:
    """Metrics × (dataset, protocol, dimension, statistic) for one protocol family ("paper",
    "canonical" or "live": a column per campaign): the public metrics, and the submitted ones in
    `extra` that only this viewer may see, each ranked in its own clusters (the public metrics and it)."""
    # Oldest version first, so each cell ends up with the newest version that has a result.
    results = (
        CorrelationResult.objects.filter(
            level=level, protocol_name=protocol_name, dataset__in=Dataset.objects.visible_to(None)
        )
        .select_related("dataset", "metric_version__metric")
        .defer("detail")
        .order_by("metric_version__created_at", "id")
    )
    columns = {c.slug: c for c in metric_board_columns(extra=extra)}
    rows: dict[str, MetricBoardRow] = {}
    headers: dict[ColumnKey, MetricBoardHeader] = {}
    campaigns: dict[str, Campaign | None] = {}
    for result in results:
        column = columns.get(result.metric_version.metric.slug)
        if column is None or (family and column.family != family):
            continue
        if reference == "free" and not column.reference_free or reference == "based" and column.reference_free:
            continue
        live = result.protocol_name == "live"
        if result.protocol not in campaigns:
            campaigns[result.protocol] = campaign_of_protocol(result.protocol) if live else None
        if live and campaigns[result.protocol] is None:  # a deleted campaign's
            continue
        header = MetricBoardHeader(
            result.dataset, result.dimension, result.statistic, result.protocol, campaigns[result.protocol]
        )
        headers.setdefault(header.key, header)
        rows.setdefault(column.slug, MetricBoardRow(column)).cells[header.key] = result
    ordered = sorted(
        headers.values(),
        key=lambda h: (h.dataset.title, h.campaign.title if h.campaign else "", h.protocol, h.dimension, h.statistic),
    )
    clusters = significance_ranks(protocol_name=protocol_name, level=level, extra=extra)
    for row in rows.values():
        row.values = [row.cells.get(header.key) for header in ordered]
        row.ranks = [clusters.get(header.key, {}).get(row.column.slug) for header in ordered]
        row.published = [
            published_value(header.dataset.source_format, row.column.slug, header.dimension, header.statistic, result.n)
            if protocol_name == PROTOCOLS[0] and result is not None
            else None
            for result, header in zip(row.values, ordered, strict=True)
        ]
    return ordered, sorted(rows.values(), key=lambda r: r.column.slug)


def metric_correlations(*, metric: Metric, dataset: Dataset) -> tuple[list[CorrelationResult], dict[str, Campaign]]:
    """The metric's correlations on `dataset` (a metric page's table): the dataset's own protocols
    first, then each live campaign's (a deleted campaign's left out); and the campaign of each live
    protocol key."""
    results = list(
        CorrelationResult.objects.filter(metric_version__metric=metric, dataset=dataset)
        .select_related("metric_version")
        .order_by("protocol", "level", "dimension", "statistic")
    )
    live = {r.protocol for r in results if r.protocol_name == "live"}
    campaigns = {protocol: found for protocol in sorted(live) if (found := campaign_of_protocol(protocol))}
    results = [r for r in results if r.protocol_name != "live"] + [r for r in results if r.protocol in campaigns]
    return results, campaigns


@dataclass
class MetricOnDataset:
    metric_name: str
    human: np.ndarray  # one row per judgment with a metric score
    metric: np.ndarray
    all_scores: np.ndarray  # every candidate caption's score
    failed: int


def metric_charted_version(*, metric: Metric, dataset: Dataset) -> MetricVersion | None:
    """The version the metric page charts on the dataset: the newest whose dataset job is done."""
    return (
        metric.versions.filter(jobs__dataset=dataset, jobs__system__isnull=True, jobs__status=EvaluationJob.Status.DONE)
        .order_by("-created_at")
        .first()
    )


def metric_on_dataset(
    *, metric: Metric, dataset: Dataset, dimension: str | None = None, version: MetricVersion | None = None
) -> MetricOnDataset | None:
    """The charted version's (metric_charted_version, unless given) stored scores beside the human
    judgments (rating datasets)."""
    version = version or metric_charted_version(metric=metric, dataset=dataset)
    if version is None:
        return None
    own = Caption.objects.own().filter(item__dataset=dataset)
    scores = dict(Score.objects.filter(metric_version=version, caption__in=own).values_list("caption_id", "value"))
    judgments = Judgment.objects.filter(caption__in=own)
    if dimension:
        judgments = judgments.filter(dimension=dimension)
    pairs = [(value, scores.get(caption)) for caption, value in judgments.values_list("caption_id", "value")]
    kept = [(h, m) for h, m in pairs if m is not None]
    values = [value for value in scores.values() if value is not None]
    return MetricOnDataset(
        metric.name,
        np.array([h for h, _ in kept], dtype=float),
        np.array([m for _, m in kept], dtype=float),
        np.array(values, dtype=float),
        failed=len(scores) - len(values),
    )


@dataclass(frozen=True)
class MetricBoardVersion:
    key: str  # changes with anything the metric board shows
    families: frozenset[str]  # the registered metrics' families (the board's `family` filter)


def metric_board_version() -> MetricBoardVersion:
    """What the metric board is read from, fingerprinted in one query: the results revision (moved
    in the transaction of every statement that writes correlation or significance results),
    the metric versions (count, newest), and the datasets', metrics' and campaigns' shown fields in
    full (small tables, whatever wrote them); and the metrics' families. A change the board does not
    show may change it too (the table is then rendered again for nothing, never served stale)."""
    table = {
        model: connection.ops.quote_name(model._meta.db_table)
        for model in (ResultsRevision, MetricVersion, Dataset, Metric, MetricSubmission, Campaign)
    }
    trained = connection.ops.quote_name(MetricSubmission.trained_on.through._meta.db_table)
    rows = "SELECT md5(string_agg(concat_ws('|', {}), ',' ORDER BY id)) FROM {}"
    dataset_fields = "id, slug, title, is_public, source_format"
    metric_fields = (
        "id, slug, name, family, higher_is_better, needs::text, citation, description, is_registered, available"
    )
    submission_fields = "id, metric_id, owner_id, is_public, status, paper_url, code_url"
    parts = (
        # The counter and its row's transaction id (a restored backup's counter may repeat; its xmin would not).
        f"SELECT concat_ws(':', max(number), max(xmin::text)) FROM {table[ResultsRevision]}",
        f"SELECT concat_ws(':', count(*), max(id)) FROM {table[MetricVersion]}",
        rows.format(dataset_fields, table[Dataset]),
        rows.format(metric_fields, table[Metric]),
        rows.format(submission_fields, table[MetricSubmission]),
        rows.format("id, metricsubmission_id, dataset_id", trained),
        rows.format("id, slug, title", table[Campaign]),  # a live column's header
        # The families the public may filter by: a private submitted metric adds none.
        f"SELECT string_agg(DISTINCT family, ',') FROM {table[Metric]} WHERE is_registered OR id IN "
        f"(SELECT metric_id FROM {table[MetricSubmission]} WHERE is_public AND status <> 'withdrawn')",
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"({part})" for part in parts))
        *key, families = cursor.fetchone()
    return MetricBoardVersion("/".join(str(part) for part in key), frozenset((families or "").split(",")) - {""})


def significance_ranks(
    *, protocol_name: str, level: str = "caption", extra: AbstractSet[str] = frozenset()
) -> dict[ColumnKey, dict[str, int]]:
    """(dataset id, protocol key, dimension, statistic) -> metric slug -> significance cluster
    (1 = best): the public clusters, and for each private metric in `extra` its rank in its own rows."""
    found = SignificanceResult.objects.filter(protocol_name=protocol_name, level=level)
    ranks: dict[ColumnKey, dict[str, int]] = {}
    for r in found.filter(subject__isnull=True):
        ranks[(r.dataset_id, r.protocol, r.dimension, r.statistic)] = dict(zip(r.metrics, r.ranks, strict=True))
    for r in found.filter(subject__slug__in=list(extra)).select_related("subject"):
        slug = r.subject.slug if r.subject else ""
        own = dict(zip(r.metrics, r.ranks, strict=True))
        if slug in own:
            ranks.setdefault((r.dataset_id, r.protocol, r.dimension, r.statistic), {})[slug] = own[slug]
    return ranks
