"""The metrics index (/metrics/all/): every metric with what a visitor needs to pick one (family,
whether it needs references, whether this site computes it, its version, on how many public
datasets its agreement with people is known, what 1,000 captions cost where it calls a priced
service), and the metric board's list of metrics without a number yet, with why in plain words.

Why a metric is not computed here is said in plain words from what it needs
(`scoring.wording.unavailable_words`); the server's own reason (paths, settings, commands) is filled
in for staff only."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from catalog.models import Dataset
from scoring.models import CorrelationResult, Metric
from scoring.services.estimates import TypicalCost, cost_per_thousand
from scoring.wording import unavailable_words

BUILT_IN, SUBMITTED = "built-in", "submitted"  # a metric of the capbench_eval registry, or one a user sent
COMPUTED_HERE = "computed on this site"
UPLOADED = "scores uploaded by its authors, not computed here"
NOT_SCORED_YET = "not scored on a public dataset with human judgments yet"


@dataclass(frozen=True)
class MetricIndexRow:
    slug: str
    name: str
    family: str
    kind: str  # BUILT_IN or SUBMITTED
    references: bool  # needs reference captions
    available: bool
    availability: str  # in plain words, for anyone
    staff_reason: str  # the server's own reason it is unavailable: for staff only, else ""
    version: str | None  # Metric.current_version's
    datasets: int  # public datasets with correlation results (any version, protocol, level)
    cost: TypicalCost | None  # per 1,000 captions, where the metric calls a priced service


@dataclass(frozen=True)
class WithoutNumbers:
    slug: str
    name: str
    words: str  # why, in plain words (the same for every viewer: the metric board's table is shared)


def metric_index(viewer, *, metrics: QuerySet[Metric] | None = None) -> list[MetricIndexRow]:
    """One row per metric of `metrics` (the registered ones by default; the view passes its own
    queryset where it must apply another visibility rule), by family then name."""
    if metrics is None:
        metrics = Metric.objects.filter(is_registered=True)
    staff = bool(getattr(viewer, "is_staff", False))
    counts = public_dataset_counts()
    rows = [
        MetricIndexRow(
            slug=metric.slug,
            name=metric.name,
            family=metric.family,
            kind=SUBMITTED if metric.family == SUBMITTED else BUILT_IN,
            references="references" in (metric.needs or []),
            available=metric.available,
            availability=availability_words(metric),
            staff_reason=metric.unavailable_reason if staff and not metric.available else "",
            version=metric.current_version.version if metric.current_version else None,
            datasets=counts.get(metric.pk, 0),
            cost=cost_per_thousand(metric.slug),
        )
        for metric in metrics.select_related("current_version")
    ]
    return sorted(rows, key=lambda row: (row.family, row.name.lower(), row.slug))


def metrics_without_numbers(*, family: str | None = None, reference: str | None = None) -> list[WithoutNumbers]:
    """The registered metrics with no correlation result on any public dataset, with why in plain
    words; `family` and `reference` ("free" / "based") as the metric board's filters. Nothing in it
    depends on the viewer (the board's table, this list included, is kept for everyone alike)."""
    counts = public_dataset_counts()
    found = Metric.objects.filter(is_registered=True).exclude(pk__in=list(counts))
    if family:
        found = found.filter(family=family)
    listed = []
    for metric in found.order_by("family", "name", "slug"):
        reference_free = "references" not in (metric.needs or [])
        if reference == "free" and not reference_free or reference == "based" and reference_free:
            continue
        words = availability_words(metric) if not metric.available else NOT_SCORED_YET
        listed.append(WithoutNumbers(metric.slug, metric.name, words))
    return listed


def availability_words(metric: Metric) -> str:
    if metric.family == SUBMITTED:
        return UPLOADED
    return COMPUTED_HERE if metric.available else unavailable_words(metric.needs or [])


def public_dataset_counts() -> dict[int, int]:
    """Metric id -> how many public datasets hold a correlation result of one of its versions."""
    found = (
        CorrelationResult.objects.filter(dataset__in=Dataset.objects.visible_to(None))
        .values("metric_version__metric_id")
        .annotate(datasets=Count("dataset", distinct=True))
    )
    return {row["metric_version__metric_id"]: row["datasets"] for row in found}
