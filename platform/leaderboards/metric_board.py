"""The meta-evaluation board: metrics × (dataset, protocol, dimension, statistic), each cell a
correlation with people and its significance cluster, for one protocol family and level, the rows
ranked by agreement (MetricBoardPage: the page's and the API's one model); the query string as the
page and the API read it, and the fingerprint its kept table is stored under."""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import NamedTuple
from urllib.parse import urlencode

from django.db import connection

from campaigns.models import Campaign
from campaigns.selectors import campaign_of_protocol
from campaigns.services.results import MEAN, campaign_protocol
from capbench_eval.metaeval.published import published_value
from catalog.models import Dataset
from leaderboards.columns import Column, metric_board_columns
from plumbing.errors import ApplicationError, NotFound
from scoring.models import CorrelationResult, Metric, MetricVersion, ResultsRevision, SignificanceResult
from scoring.services.correlations import dataset_protocols
from workbench.models import MetricSubmission

# The metric board's protocol families, "paper" first (the default); "live": the live campaigns'
# correlations (each campaign a protocol of its own, campaigns.models.Campaign.protocol_key).
PROTOCOLS = ("paper", "canonical", "live")
LEVELS = ("caption", "system")  # the metric board's levels, "caption" first (the default)
REFERENCES = ("free", "based")  # the metric board's filter on reference use
BY_NAME = "metric"  # `?sort=` naming the metric column (names A to Z); a column's own is MetricBoardHeader.param
ORDERS = ("asc", "desc")


class UnknownProtocol(NotFound, ValueError):
    def __init__(self, protocol: str):
        super().__init__(f"no protocol {protocol!r} ({', '.join(PROTOCOLS[:-1])} or {PROTOCOLS[-1]})")


class UnknownFamily(NotFound, ValueError):
    def __init__(self, family: str):
        super().__init__(f"no metric family {family!r}")


class UnknownSort(ApplicationError, ValueError):
    def __init__(self, sort: str):
        super().__init__(
            f"no column {sort[:80]!r} to sort by: {BY_NAME!r}, a dataset's slug or a column's key "
            "(<dataset>:<dimension>:<statistic>, and :<campaign> on a live column)"
        )


@dataclass(frozen=True)
class MetricBoardQuery:
    protocol: str
    level: str = LEVELS[0]
    family: str | None = None
    reference: str | None = None
    # A column's key (MetricBoardHeader.param), a dataset's slug (its default column) or BY_NAME;
    # None: the board's default column (the first dataset's). Read as sent, checked by resolve_sort.
    sort: str | None = None
    order: str | None = None  # "asc" | "desc"; None: best first (the highest agreement; names A to Z)


def metric_board_query(params, *, strict: bool = False, families: AbstractSet[str] | None = None) -> MetricBoardQuery:
    """The metric board's query string as the page and the API read it:
    `?protocol=paper|canonical|live&level=caption|system&family=<family>&reference=free|based
    &sort=<column>&order=asc|desc`. Another level reads as "caption", another reference or order as
    none; another protocol as "paper", or (`strict`, the API) UnknownProtocol; a family not among
    `families` (the registered metrics') as none, or (`strict`) UnknownFamily. `sort` is kept as sent
    (its first 400 characters): only the board knows its columns (resolve_sort)."""
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
    sort = (params.get("sort") or "")[:400] or None
    order = params.get("order") if params.get("order") in ORDERS else None
    return MetricBoardQuery(protocol, level, family, reference, sort, order)


ColumnKey = tuple[int, str, str, str]  # a metric board column: (dataset id, protocol key, dimension, statistic)


class MetricBoardHeader(NamedTuple):
    """A metric board column: its dataset, dimension and statistic under one protocol (its key);
    a live column's campaign (None otherwise); whether its statistic is the protocol's headline one
    (the first its papers report: evaluation/capbench_eval/metaeval/protocols.py)."""

    dataset: Dataset
    dimension: str
    statistic: str
    protocol: str
    campaign: Campaign | None = None
    headline: bool = False

    @property
    def key(self) -> ColumnKey:
        return (self.dataset.pk, self.protocol, self.dimension, self.statistic)

    @property
    def param(self) -> str:
        """How `?sort=` names the column: `<dataset>:<dimension>:<statistic>` (one protocol per
        dataset in a family), and `:<campaign>` on a live column (a dataset may have several)."""
        parts = (self.dataset.slug, self.dimension, self.statistic)
        return ":".join(parts + (self.campaign.slug,) if self.campaign else parts)

    @property
    def order(self) -> tuple:
        """Its place among the columns: by dataset (and campaign), each dataset's main dimension
        first (the one its systems' ratings are shown in) and the headline statistic first in
        each dimension, so that a dataset's first column is the one it is ranked by by default."""
        main = self.dimension in (self.dataset.people_dimension, MEAN)
        campaign = self.campaign.title if self.campaign else ""
        return (
            self.dataset.title,
            campaign,
            self.protocol,
            not main,
            self.dimension,
            not self.headline,
            self.statistic,
        )


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
    keys: dict[int, dict[str, str]] = {}

    def current(dataset: Dataset) -> dict[str, str]:
        if dataset.pk not in keys:
            keys[dataset.pk] = headline_statistics(dataset)
        return keys[dataset.pk]

    for result in results:
        column = columns.get(result.metric_version.metric.slug)
        if column is None or (family and column.family != family):
            continue
        if reference == "free" and not column.reference_free or reference == "based" and column.reference_free:
            continue
        live = result.protocol_name == "live"
        if not live and result.protocol not in current(result.dataset):  # an older version's, being replaced
            continue
        if result.protocol not in campaigns:
            campaigns[result.protocol] = campaign_of_protocol(result.protocol) if live else None
        campaign = campaigns[result.protocol]
        if live and campaign is None:  # a deleted campaign's
            continue
        headline = campaign_protocol(campaign).statistics[0] if campaign else current(result.dataset)[result.protocol]
        header = MetricBoardHeader(
            result.dataset, result.dimension, result.statistic, result.protocol, campaign, result.statistic == headline
        )
        headers.setdefault(header.key, header)
        rows.setdefault(column.slug, MetricBoardRow(column)).cells[header.key] = result
    ordered = sorted(headers.values(), key=lambda h: h.order)
    clusters = significance_ranks(protocol_name=protocol_name, level=level, extra=extra)
    for row in rows.values():
        row.values = [row.cells.get(header.key) for header in ordered]
        row.ranks = [clusters.get(header.key, {}).get(row.column.slug) for header in ordered]
        row.published = [
            published_value(
                header.dataset.source_format,
                row.column.slug,
                header.dimension,
                header.statistic,
                result.n,
                version=header.dataset.protocol_version,
            )
            if protocol_name == PROTOCOLS[0] and result is not None
            else None
            for result, header in zip(row.values, ordered, strict=True)
        ]
    return ordered, sorted(rows.values(), key=lambda r: r.column.slug)


def headline_statistics(dataset: Dataset) -> dict[str, str]:
    """The dataset's current protocols (their keys) and each one's headline statistic."""
    return {p.key: p.statistics[0] for p in dataset_protocols(dataset)}


def column_order(dataset: Dataset, protocol_name: str, protocol: str, dimension: str, statistic: str) -> tuple:
    """Where a (protocol, dimension, statistic) of `dataset` stands among its columns on every board:
    the board's default family first ("paper", then "canonical", then a live campaign's), the
    current protocols before older ones, then as MetricBoardHeader.order within the protocol. The
    first is the one the metric board ranks the dataset's metrics by and its significance page
    opens on (one default)."""
    headlines = headline_statistics(dataset)
    family = PROTOCOLS.index(protocol_name) if protocol_name in PROTOCOLS else len(PROTOCOLS)
    header = MetricBoardHeader(dataset, dimension, statistic, protocol, headline=headlines.get(protocol) == statistic)
    return (family, protocol not in headlines, *header.order)


@dataclass
class MetricBoardPage:
    """The metric board as a viewer is shown it: its columns, the rows ranked by `sort` (a column's
    values best first, or the other way round; every metric without a value there last, by name),
    and what it is sorted by (`query.sort`: the column's key, BY_NAME or None when the board has no
    column)."""

    query: MetricBoardQuery
    headers: list[MetricBoardHeader]
    rows: list[MetricBoardRow]

    @property
    def sorted_header(self) -> MetricBoardHeader | None:
        return next((h for h in self.headers if h.param == self.query.sort), None)

    @property
    def descending(self) -> bool:
        """Whether the sorted values run from the highest down (a name column: from Z)."""
        natural = self.query.sort not in (None, BY_NAME)  # agreement: highest first; names: A first
        return natural if self.query.order is None else self.query.order == "desc"

    @property
    def best_first(self) -> bool:
        return self.query.order is None

    def sort_link(self, param: str) -> SortLink:
        """Sorting by the column `param` names (a column's key or BY_NAME): best first (names A to
        Z), or the other way round when it is the sorted column and runs best first; the filters kept."""
        query = self.query
        kept = {"protocol": query.protocol, "level": query.level, "family": query.family, "reference": query.reference}
        params = {name: value for name, value in kept.items() if value}
        params["sort"] = param
        here = param == query.sort
        if here and self.best_first:
            params["order"] = "desc" if param == BY_NAME else "asc"
        aria = ("descending" if self.descending else "ascending") if here else "none"
        return SortLink("?" + urlencode(params), aria)

    def sort_links(self) -> list[tuple[MetricBoardHeader, SortLink]]:
        return [(header, self.sort_link(header.param)) for header in self.headers]


class SortLink(NamedTuple):
    href: str  # the query string sorting by the column
    aria_sort: str  # which way its values run down the table: "ascending", "descending" or "none"


def sort_choices(headers: Iterable[MetricBoardHeader]) -> dict[str, str]:
    """What `?sort=` may say on a board with these columns (in their order) -> the column's key it
    names: each column's key, each dataset's slug (its first column: the one it is ranked by), and
    BY_NAME; None (no sort) -> the first dataset's first column."""
    choices: dict[str, str] = {BY_NAME: BY_NAME}
    for header in headers:
        choices.setdefault(header.dataset.slug, header.param)
        choices[header.param] = header.param
    return choices


def resolve_sort(query: MetricBoardQuery, choices: dict[str, str], *, strict: bool = False) -> MetricBoardQuery:
    """`query` with its sort made a column's key (sort_choices), the default where it names none
    (or, `strict`, UnknownSort), and its order None where it is the sorted column's natural one."""
    default = next((param for name, param in choices.items() if name != BY_NAME), None)
    if strict and query.sort is not None and query.sort not in choices:
        raise UnknownSort(query.sort)
    sort = choices.get(query.sort or "", default)
    natural = "asc" if sort == BY_NAME else "desc"
    return replace(query, sort=sort, order=None if query.order in (None, natural) else query.order)


def metric_board_page(
    query: MetricBoardQuery,
    *,
    extra: AbstractSet[str] = frozenset(),
    board: tuple[list[MetricBoardHeader], list[MetricBoardRow]] | None = None,
    strict: bool = False,
) -> MetricBoardPage:
    """The metric board for `query` (metric_board; `board` where the caller has built it for the
    same protocol, level and filters), its sort resolved (resolve_sort) and its rows ranked."""
    headers, rows = board if board is not None else metric_board_of(query, extra=extra)
    query = resolve_sort(query, sort_choices(headers), strict=strict)
    page = MetricBoardPage(query, headers, rows)
    page.rows = ranked_rows(rows, headers.index(page.sorted_header) if page.sorted_header else None, page.descending)
    return page


def metric_board_of(
    query: MetricBoardQuery, *, extra: AbstractSet[str] = frozenset()
) -> tuple[list[MetricBoardHeader], list[MetricBoardRow]]:
    return metric_board(
        protocol_name=query.protocol, level=query.level, family=query.family, reference=query.reference, extra=extra
    )


def ranked_rows(rows: list[MetricBoardRow], column: int | None, descending: bool) -> list[MetricBoardRow]:
    """The rows by their value in the column at index `column` (None: by name), every row without
    one after them by name; ties by name."""

    def name(row: MetricBoardRow) -> tuple[str, str]:
        return (row.column.name.lower(), row.column.slug)

    if column is None:
        return sorted(rows, key=name, reverse=descending)
    valued = [(value, row) for row in rows if (value := cell_value(row.values[column])) is not None]
    rest = [row for row in rows if cell_value(row.values[column]) is None]
    valued.sort(key=lambda pair: (-pair[0] if descending else pair[0], name(pair[1])))
    return [row for _, row in valued] + sorted(rest, key=name)


def cell_value(result: CorrelationResult | None) -> float | None:
    value = None if result is None else result.value
    return None if value is None or math.isnan(value) else value


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
