"""A metric board column's significance clusters as one page model: the metrics best first, their
values, clusters and one-sided p-values of paired bootstrap draws (scoring's dataset_significance),
as far as the viewer may see the metrics."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from catalog.models import Dataset
from leaderboards.metric_board import column_order
from plumbing.errors import NotFound
from scoring.models import CorrelationResult, Metric, SignificanceResult


class NoSuchColumn(NotFound, LookupError):
    """The protocol, dimension and statistic asked for name no clusters of the dataset."""

    def __init__(self) -> None:
        super().__init__("no such clusters")


@dataclass
class SignificancePage:
    dataset: Dataset
    result: SignificanceResult | None  # None: no clusters computed yet
    rows: list[dict] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def significance_page(dataset: Dataset, viewer, params) -> SignificancePage:
    """`?protocol=&dimension=&statistic=&level=` (default: the column the metric board ranks the
    dataset's metrics by, metric_board.column_order: its paper protocol's headline statistic where it
    has one), `?metric=` a private submitted metric the viewer may see (its own clusters: the public
    metrics and it). NoSuchColumn for a column that has none."""
    # `?metric=` a private submitted metric the viewer may see: its own clusters (the public metrics and it).
    subject = Metric.objects.visible_to(viewer).filter(slug=params.get("metric", ""), submission__isnull=False)
    own = SignificanceResult.objects.filter(subject__in=subject)
    results = own if own.filter(dataset=dataset).exists() else SignificanceResult.objects.filter(subject__isnull=True)
    results = results.filter(dataset=dataset, level=params.get("level", "caption"))
    if not any(params.get(name) for name in ("protocol", "dimension", "statistic")):
        result = default_clusters(dataset, results)
        if result is None:
            return SignificancePage(dataset, None)
    else:
        result = results.filter(
            protocol=params.get("protocol", ""),
            dimension=params.get("dimension", ""),
            statistic=params.get("statistic", ""),
        ).first()
        if result is None:
            raise NoSuchColumn()
    names = dict(Metric.objects.visible_to(viewer).filter(slug__in=result.metrics).values_list("slug", "name"))
    # A metric hidden or withdrawn since the clusters were computed is left out until they are again.
    shown = [i for i, slug in enumerate(result.metrics) if slug in names]
    result.metrics = [result.metrics[i] for i in shown]
    result.values = [result.values[i] for i in shown]
    result.ranks = [result.ranks[i] for i in shown]
    result.p_values = [[result.p_values[i][j] for j in shown] for i in shown]
    intervals = _intervals(result)
    rows = [
        {
            "slug": slug,
            "name": names.get(slug, slug),
            "value": value,
            "low": intervals.get(slug, (None, None))[0],
            "high": intervals.get(slug, (None, None))[1],
            "rank": rank,
            "p": [None if j <= i else result.p_values[i][j] for j in range(len(result.metrics))],
        }
        for i, (slug, value, rank) in enumerate(zip(result.metrics, result.values, result.ranks, strict=True))
    ]
    return SignificancePage(dataset, result, rows, [names.get(slug, slug) for slug in result.metrics])


def default_clusters(dataset: Dataset, results: QuerySet[SignificanceResult]) -> SignificanceResult | None:
    """Of the dataset's `results`, the clusters of the column its metrics are ranked by on the
    metric board by default (the same rule, metric_board.column_order)."""
    columns = results.values_list("pk", "protocol_name", "protocol", "dimension", "statistic")
    ordered = sorted(columns, key=lambda c: column_order(dataset, *c[1:]))
    return results.filter(pk=ordered[0][0]).first() if ordered else None


def _intervals(result: SignificanceResult) -> dict[str, tuple[float | None, float | None]]:
    """Each metric's interval on the column, as the metric board shows it (its newest version's cell)."""
    found = (
        CorrelationResult.objects.filter(
            dataset_id=result.dataset_id,
            protocol=result.protocol,
            dimension=result.dimension,
            statistic=result.statistic,
            level=result.level,
            metric_version__metric__slug__in=result.metrics,
        )
        .order_by("metric_version__created_at", "id")
        .values_list("metric_version__metric__slug", "low", "high")
    )
    return {slug: (low, high) for slug, low, high in found}  # (later versions overwrite)
