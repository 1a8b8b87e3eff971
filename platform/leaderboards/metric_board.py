"""The meta-evaluation board: metrics × (dataset, protocol, dimension, statistic), each cell a
correlation with people and its significance cluster, for one protocol family and level; the query
string as the page and the API read it, and the fingerprint its kept table is stored under."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db import connection

from campaigns.models import Campaign
from campaigns.selectors import campaign_of_protocol
from catalog.models import Dataset
from evaluation.metaeval.published import published_value
from leaderboards.columns import Column, metric_board_columns
from scoring.models import CorrelationResult, Metric, MetricVersion, ResultsRevision, SignificanceResult
from scoring.services.correlations import dataset_protocols
from workbench.models import MetricSubmission

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
    keys: dict[int, set[str]] = {}

    def current(dataset: Dataset) -> set[str]:
        if dataset.pk not in keys:
            keys[dataset.pk] = {p.key for p in dataset_protocols(dataset)}
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
