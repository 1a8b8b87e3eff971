"""Two systems of a dataset side by side: per metric the difference on the images both captioned,
with a paired bootstrap interval and p-value (evaluation.metaeval.paired), and the images where the
two differ most or where a metric and people disagree about which caption is better."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Avg

from catalog.models import Caption, Dataset, Item, Judgment, System
from evaluation import metrics as registry
from evaluation.metaeval.paired import PairedDifference, image_weights, mean_statistic, paired_difference
from leaderboards.caching import deployment_digest, kept_get, kept_set
from leaderboards.columns import Column
from leaderboards.snapshots import board_payload, digest_of
from scoring.models import Score
from scoring.selectors import system_values_shown

SIGNIFICANCE = 0.05
EXPLORER_PAGE = 20
EXPLORER_ORDERS = ("differ", "people")


class SystemsNotComparable(ValueError):
    """The two systems asked for cannot be compared (named in plain words)."""


@dataclass
class MetricDifference:
    column: Column
    a: float | None  # each system's number on the shared images (the metric's corpus number or mean)
    b: float | None
    difference: PairedDifference | None
    basis: str = ""  # "corpus" (the board's number, resampled) or "mean" (mean of per-caption scores)
    reason: str = ""  # why there is no difference, in plain words

    @property
    def better(self) -> str | None:
        """ "a", "b", or None when the interval holds 0 (p ≥ 0.05) or there is no difference."""
        found = self.difference
        if found is None or not math.isfinite(found.p_value) or found.p_value >= SIGNIFICANCE:
            return None
        if not (found.value > 0 and found.low > 0 or found.value < 0 and found.high < 0):
            return None  # the interval must lie on the difference's side of 0 too
        return "a" if (found.value > 0) == self.column.higher_is_better else "b"


@dataclass
class ExploredImage:
    item: Item
    a: list[Caption]
    b: list[Caption]
    scores: list[tuple[Column, float | None, float | None]]  # per metric: a's and b's mean score on the image
    people: tuple[float, float] | None = None  # a's and b's mean human rating on the image
    key: float = 0.0  # what the explorer sorts by (descending)


@dataclass
class _PerImage:
    values: dict[int, float] = field(default_factory=dict)  # item id -> mean score
    statistics: dict[int, list | None] = field(default_factory=dict)  # item id -> summed statistics


@dataclass
class Comparison:
    dataset: Dataset
    a: System
    b: System
    images: int  # images both systems captioned
    metrics: list[MetricDifference] = field(default_factory=list)
    people_dimension: str | None = None
    # What the explorer reads (comparison_inputs): per (system id, metric slug) the per-image scores.
    per_image: dict[tuple[int, str], _PerImage] = field(default_factory=dict)
    versions: dict[tuple[int, str], int] = field(default_factory=dict)


def systems_for_comparison(dataset: Dataset, a: str | None, b: str | None, viewer) -> tuple[System, System]:
    """The two systems by slug among those `viewer` may see (catalog.visibility), else
    SystemsNotComparable (the same words for a system that does not exist and one hidden)."""
    if not a or not b:
        raise SystemsNotComparable("choose two systems")
    if a == b:
        raise SystemsNotComparable("choose two different systems")
    found = {s.slug: s for s in System.objects.visible_to(viewer).filter(dataset=dataset, slug__in=[a, b])}
    missing = [slug for slug in (a, b) if slug not in found]
    if missing:
        raise SystemsNotComparable(f"no system {missing[0]!r} on this board")
    return found[a], found[b]


def _scores_by_image(systems: list[System], versions: dict[tuple[int, str], int]) -> dict[tuple[int, str], _PerImage]:
    """(system id, metric slug) -> per image: the mean of the system's finite scores on it and their
    summed statistics, under the metric version its board number comes from."""
    wanted = set(versions.values())
    rows = (
        Score.objects.filter(caption__system__in=systems, metric_version_id__in=wanted, value__isnull=False)
        .order_by()
        .values_list("caption__system_id", "metric_version_id", "caption__item_id", "value", "statistics")
    )
    slug_of = {(system, version): slug for (system, slug), version in versions.items()}
    collected: dict[tuple[int, str], dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for system_id, version_id, item_id, value, statistics in rows.iterator():
        slug = slug_of.get((system_id, version_id))
        if slug is not None and value is not None and math.isfinite(value):
            collected[(system_id, slug)][item_id].append((value, statistics))
    out: dict[tuple[int, str], _PerImage] = {}
    for key, by_item in collected.items():
        shown = out[key] = _PerImage()
        for item_id, pairs in by_item.items():
            shown.values[item_id] = sum(value for value, _ in pairs) / len(pairs)
            shown.statistics[item_id] = _summed([statistics for _, statistics in pairs])
    return out


def _summed(statistics: list) -> list | None:
    """Numeric per-caption statistics summed field by field (several captions of one image); None
    when a caption has none or they are not lists of numbers."""
    if any(not isinstance(s, list) or not all(isinstance(x, int | float) for x in s) for s in statistics):
        return None
    if len({len(s) for s in statistics}) != 1:
        return None
    return [sum(column) for column in zip(*statistics, strict=True)]


def metric_statistic(slug: str, values: np.ndarray, statistics: list) -> tuple[Callable, str]:
    """How a system's number is made from weighted images: the metric's own corpus number when it
    can be resampled (BLEU from its summed counts, every mean metric), else the mean of per-image
    scores."""
    try:
        metric = registry.get(slug)
        stats = None if any(s is None for s in statistics) else statistics
        metric.resampled(values, stats, None)
    except (KeyError, NotImplementedError, ValueError):
        return mean_statistic(values), "mean"
    return (lambda weights: metric.resampled(values, stats, weights)), "corpus"


@dataclass
class ComparisonInputs:
    """What a comparison is computed from, read in a few queries (the bootstrap is the cost)."""

    dataset: Dataset
    a: System
    b: System
    columns: list[Column]
    versions: dict[tuple[int, str], int]  # (system id, metric slug) -> the version its board number is from
    per_image: dict[tuple[int, str], _PerImage]
    shared: list[int]  # item ids both systems captioned
    replicates: int

    @property
    def key(self) -> str:
        """Where the result is kept: it depends on nothing else (the bootstrap's seed is fixed)."""
        scored = sorted((system, slug, version) for (system, slug), version in self.versions.items())
        return "comparison:" + digest_of(
            [deployment_digest(), self.a.pk, self.b.pk, scored, self.shared, self.replicates]
        )


def comparison_inputs(
    dataset: Dataset, a: System, b: System, *, replicates: int = 1000, payload: dict | None = None
) -> ComparisonInputs:
    payload = payload if payload is not None else board_payload(dataset)
    shown = system_values_shown(dataset=dataset)
    versions = {key: value.metric_version_id for key, value in shown.items() if key[0] in (a.pk, b.pk)}
    shared = sorted(
        set(Caption.objects.filter(system=a).values_list("item_id", flat=True))
        & set(Caption.objects.filter(system=b).values_list("item_id", flat=True))
    )
    columns = [Column(**column) for column in payload["columns"]]
    return ComparisonInputs(dataset, a, b, columns, versions, _scores_by_image([a, b], versions), shared, replicates)


def comparison_kept(inputs: ComparisonInputs) -> Comparison | None:
    """The comparison computed earlier from the same inputs (kept in this process and in Valkey)."""
    kept = kept_get(inputs.key)
    return None if kept is None else _comparison(inputs, kept)


def comparison(inputs: ComparisonInputs) -> Comparison:
    """Every board metric's paired difference a − b over the images both systems captioned (one
    weights matrix for all metrics, so the differences are paired with each other too), kept."""
    metrics = _differences(inputs)
    kept_set(inputs.key, metrics)
    return _comparison(inputs, metrics)


def _comparison(inputs: ComparisonInputs, metrics: list[MetricDifference]) -> Comparison:
    found = Comparison(inputs.dataset, inputs.a, inputs.b, len(inputs.shared), metrics, inputs.dataset.people_dimension)
    found.per_image = inputs.per_image
    found.versions = inputs.versions
    return found


def _differences(inputs: ComparisonInputs) -> list[MetricDifference]:
    a, b, per_image, shared = inputs.a, inputs.b, inputs.per_image, inputs.shared
    metrics: list[MetricDifference] = []
    if not shared:
        return metrics
    position = {item: i for i, item in enumerate(shared)}
    weights = image_weights(len(shared), replicates=inputs.replicates)
    for column in inputs.columns:
        version_a, version_b = inputs.versions.get((a.pk, column.slug)), inputs.versions.get((b.pk, column.slug))
        if version_a is None or version_b is None:
            metrics.append(MetricDifference(column, None, None, None, reason="not scored for both systems"))
            continue
        if version_a != version_b:
            reason = "the two systems were scored with different versions of this metric"
            metrics.append(MetricDifference(column, None, None, None, reason=reason))
            continue
        scores_a, scores_b = per_image.get((a.pk, column.slug)), per_image.get((b.pk, column.slug))
        both = [i for i in shared if scores_a and scores_b and i in scores_a.values and i in scores_b.values]
        if not both:
            metrics.append(MetricDifference(column, None, None, None, reason="no image scored for both"))
            continue
        assert scores_a is not None and scores_b is not None  # (both is empty otherwise)
        columns_of = [position[i] for i in both]
        statistic_a, basis_a = metric_statistic(
            column.slug, np.array([scores_a.values[i] for i in both]), [scores_a.statistics[i] for i in both]
        )
        statistic_b, basis_b = metric_statistic(
            column.slug, np.array([scores_b.values[i] for i in both]), [scores_b.statistics[i] for i in both]
        )
        if basis_a != basis_b:
            statistic_a = mean_statistic(np.array([scores_a.values[i] for i in both]))
            statistic_b = mean_statistic(np.array([scores_b.values[i] for i in both]))
            basis_a = "mean"
        drawn = weights if len(columns_of) == len(shared) else weights[:, columns_of]
        difference = paired_difference(statistic_a, statistic_b, drawn)
        metrics.append(
            MetricDifference(column, float(statistic_a(None)), float(statistic_b(None)), difference, basis=basis_a)
        )
    metrics.sort(key=lambda m: (m.difference is None, m.column.family, m.column.name.lower()))
    return metrics


def explored_images(
    found: Comparison,
    *,
    order: str,
    metric: str | None,
    page: int,
    per_page: int = EXPLORER_PAGE,
    people: dict[int, tuple[float, float]] | None = None,
    reference_free_only: bool = False,
) -> tuple[list[ExploredImage], int, int]:
    """One page of the shared images, with both captions, the references and every metric's scores:
    `order` "differ": where the two systems differ most under `metric`; "people": where `metric`
    prefers the caption people rated lower (the most confident disagreements first). Returns the
    page, how many images the order ranks, and the number of pages.

    `reference_free_only` (a hidden test set, for all but staff): only reference-free metrics' scores
    are shown or ordered by; a reference-based metric's per-image scores would leak the references."""
    a, b, per_image = found.a, found.b, found.per_image
    compared = explorable_columns(found, reference_free_only)
    directions = {column.slug: column.higher_is_better for column in compared}
    metric = explorer_metric(found, metric, reference_free_only=reference_free_only)
    if people is None:
        people = people_by_image(found)
    keyed: list[tuple[float, int]] = []
    if metric is not None:
        scores_a, scores_b = per_image.get((a.pk, metric), _PerImage()), per_image.get((b.pk, metric), _PerImage())
        sign = 1.0 if directions[metric] else -1.0
        for item_id in set(scores_a.values) & set(scores_b.values):
            gap = sign * (scores_a.values[item_id] - scores_b.values[item_id])  # > 0: the metric prefers a
            if order == "people":
                rated = people.get(item_id)
                if rated is None or rated[0] == rated[1] or gap == 0 or (gap > 0) == (rated[0] > rated[1]):
                    continue
                keyed.append((abs(rated[0] - rated[1]), item_id))
            else:
                keyed.append((abs(gap), item_id))
    keyed.sort(key=lambda pair: (-pair[0], pair[1]))
    pages = max(1, math.ceil(len(keyed) / per_page))
    page = min(max(page, 1), pages)
    chosen = keyed[(page - 1) * per_page : page * per_page]
    items = Item.objects.select_related("media").in_bulk([item_id for _, item_id in chosen])
    captions: dict[tuple[int, int], list[Caption]] = defaultdict(list)
    for caption in Caption.objects.filter(system__in=[a, b], item_id__in=items).order_by("id"):
        captions[(caption.system_id, caption.item_id)].append(caption)
    columns = compared
    out = []
    for key, item_id in chosen:
        scores = [
            (
                column,
                per_image.get((a.pk, column.slug), _PerImage()).values.get(item_id),
                per_image.get((b.pk, column.slug), _PerImage()).values.get(item_id),
            )
            for column in columns
        ]
        out.append(
            ExploredImage(
                items[item_id],
                captions[(a.pk, item_id)],
                captions[(b.pk, item_id)],
                scores,
                people.get(item_id),
                key,
            )
        )
    return out, len(keyed), pages


def explorable_columns(found: Comparison, reference_free_only: bool) -> list[Column]:
    """The compared metrics the explorer may show per image."""
    compared = [m.column for m in found.metrics if m.difference is not None]
    return [column for column in compared if column.reference_free or not reference_free_only]


def explorer_metric(found: Comparison, asked: str | None, *, reference_free_only: bool = False) -> str | None:
    """The metric the explorer orders by: `asked` when it was compared, else the dataset's headline
    metric when it was, else the first compared; None when none was (of the reference-free ones
    only, with `reference_free_only`)."""
    compared = [column.slug for column in explorable_columns(found, reference_free_only)]
    for slug in (asked, found.dataset.headline_metric):
        if slug in compared:
            return slug
    return compared[0] if compared else None


def people_by_image(found: Comparison) -> dict[int, tuple[float, float]]:
    """Per image both systems' captions were rated on (the dataset's people dimension): each
    system's mean rating there; empty where the dataset has none."""
    if not found.people_dimension:
        return {}
    means = (
        Judgment.objects.filter(caption__system__in=[found.a, found.b], dimension=found.people_dimension)
        .order_by()
        .values("caption__system_id", "caption__item_id")
        .annotate(mean=Avg("value"))
    )
    by: dict[int, dict[int, float]] = defaultdict(dict)
    for row in means:
        by[row["caption__item_id"]][row["caption__system_id"]] = row["mean"]
    return {
        item: (rated[found.a.pk], rated[found.b.pk])
        for item, rated in by.items()
        if found.a.pk in rated and found.b.pk in rated
    }
