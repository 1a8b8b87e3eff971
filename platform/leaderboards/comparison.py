"""Two systems of a dataset side by side: per metric each system's number exactly as the board shows
it (its value and 95% interval), and the paired difference a − b formed the same way (the mean of
per-caption scores, or a corpus metric's statistic of its summed statistics: scoring.services.numbers)
over the images both captioned, with a paired bootstrap interval and p-value
(capbench_eval.metaeval.system_value); and the images where the two differ most or where a metric
disagrees with people about which caption is better."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Avg

from capbench_eval.metaeval.paired import PairedDifference, image_weights
from capbench_eval.metaeval.system_value import ImageTotals, paired_system_difference
from catalog.models import Caption, Dataset, Item, Judgment, System
from leaderboards.caching import deployment_digest, kept_get, kept_set
from leaderboards.columns import Column
from leaderboards.snapshots import board_payload, digest_of
from plumbing.errors import ApplicationError
from scoring.models import Score
from scoring.selectors import system_values_shown
from scoring.services.numbers import metric_aggregation, totals_of
from scoring.shown import Shown

SIGNIFICANCE = 0.05
EXPLORER_PAGE = 20
EXPLORER_ORDERS = ("differ", "people")


class SystemsNotComparable(ApplicationError, ValueError):
    """The two systems asked for cannot be compared (named in plain words)."""


@dataclass
class MetricDifference:
    column: Column
    a: Shown | None  # each system's number as the board shows it (value, interval, the metric's points)
    b: Shown | None
    difference: PairedDifference | None  # a − b on the images both captioned, on the metric's scale
    reason: str = ""  # why there is no difference, in plain words

    @property
    def difference_shown(self) -> Shown | None:
        """The difference and its interval as pages show them (the metric's points)."""
        found = self.difference
        if found is None:
            return None
        return Shown(found.value, _finite(found.low), _finite(found.high), self.column.points)

    @property
    def better(self) -> str | None:
        """ "a", "b", or None when the interval holds 0 (p ≥ 0.05) or there is no difference."""
        found = self.difference
        if found is None or not math.isfinite(found.p_value) or found.p_value >= SIGNIFICANCE:
            return None
        if not (found.value > 0 and found.low > 0 or found.value < 0 and found.high < 0):
            return None  # the interval must lie on the difference's side of 0 too
        return "a" if (found.value > 0) == self.column.higher_is_better else "b"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


@dataclass
class ExploredImage:
    item: Item
    a: list[Caption]
    b: list[Caption]
    scores: list[tuple[Column, float | None, float | None]]  # per metric: a's and b's number on the image
    people: tuple[float, float] | None = None  # a's and b's mean human rating on the image
    key: float = 0.0  # what the explorer sorts by (descending)


@dataclass
class _PerImage:
    values: dict[int, float] = field(default_factory=dict)  # item id -> the metric's number on the image


@dataclass
class Comparison:
    dataset: Dataset
    a: System
    b: System
    images: int  # images both systems captioned
    metrics: list[MetricDifference] = field(default_factory=list)
    people_dimension: str | None = None
    # What the explorer reads (comparison_inputs): per (system id, metric slug) the per-image numbers.
    per_image: dict[tuple[int, str], _PerImage] = field(default_factory=dict)
    versions: dict[tuple[int, str], int] = field(default_factory=dict)

    @property
    def compared(self) -> list[MetricDifference]:
        return [m for m in self.metrics if m.difference is not None]

    @property
    def not_compared(self) -> list[MetricDifference]:
        return [m for m in self.metrics if m.difference is None]


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


@dataclass
class ComparisonInputs:
    """What a comparison is computed from, read in a few queries (the bootstrap is the cost)."""

    dataset: Dataset
    a: System
    b: System
    columns: list[Column]
    versions: dict[tuple[int, str], int]  # (system id, metric slug) -> the version its board number is from
    board: dict[tuple[int, str], Shown]  # (system id, metric slug) -> its number as the board shows it
    totals: dict[tuple[int, str], ImageTotals]  # each system's scored captions summed per image
    shared: list[int]  # item ids both systems captioned
    replicates: int

    @property
    def key(self) -> str:
        """Where the result is kept: it depends on nothing else (the bootstrap's seed is fixed)."""
        scored = sorted((system, slug, version) for (system, slug), version in self.versions.items())
        numbers = sorted(
            (system, slug, shown.value, shown.low, shown.high) for (system, slug), shown in self.board.items()
        )
        return "comparison:" + digest_of(
            [deployment_digest(), self.a.pk, self.b.pk, scored, numbers, self.shared, self.replicates]
        )


def comparison_inputs(
    dataset: Dataset, a: System, b: System, *, replicates: int = 1000, payload: dict | None = None
) -> ComparisonInputs:
    payload = payload if payload is not None else board_payload(dataset)
    columns = [Column(**column) for column in payload["columns"]]
    scale = {column.slug: column.points for column in columns}
    shown = {key: found for key, found in system_values_shown(dataset=dataset).items() if key[0] in (a.pk, b.pk)}
    versions = {key: found.metric_version_id for key, found in shown.items()}
    # The board's own cells where the board ranks the system; a caption source it does not rank
    # (comparable all the same) has its numbers from where the board's come from.
    board = {key: Shown(found.value, found.low, found.high, scale.get(key[1], 1.0)) for key, found in shown.items()}
    for row in payload["rows"]:
        if row["system"]["id"] in (a.pk, b.pk):
            for slug, cell in row["cells"].items():
                if cell["state"] == "value":
                    board[(row["system"]["id"], slug)] = Shown(cell["value"], cell["low"], cell["high"], scale[slug])
    wanted = {(system, version): slug for (system, slug), version in versions.items()}
    scores = Score.objects.filter(caption__system__in=[a, b], metric_version_id__in={v for _, v in wanted})
    summed = totals_of(scores, wanted)
    totals = {
        (system, slug): found
        for (system, slug), version in versions.items()
        if (found := summed.get((system, version))) is not None
    }
    shared = sorted(
        set(Caption.objects.filter(system=a).values_list("item_id", flat=True))
        & set(Caption.objects.filter(system=b).values_list("item_id", flat=True))
    )
    return ComparisonInputs(dataset, a, b, columns, versions, board, totals, shared, replicates)


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
    found.per_image = {key: _per_image(key[1], totals) for key, totals in inputs.totals.items()}
    found.versions = inputs.versions
    return found


def _per_image(slug: str, totals: ImageTotals) -> _PerImage:
    """The metric's number on each image alone (the mean of its captions' scores, or the corpus
    statistic of their statistics: one caption's own score), for the explorer."""
    values = metric_aggregation(slug).from_totals(totals.totals) if len(totals.images) else np.array([])
    return _PerImage(
        {
            int(item): float(value)
            for item, value in zip(totals.images.tolist(), values, strict=True)
            if math.isfinite(value)
        }
    )


def _differences(inputs: ComparisonInputs) -> list[MetricDifference]:
    a, b, shared = inputs.a, inputs.b, inputs.shared
    metrics: list[MetricDifference] = []
    if not shared:
        return metrics
    position = {item: i for i, item in enumerate(shared)}
    weights = image_weights(len(shared), replicates=inputs.replicates)
    for column in inputs.columns:
        key_a, key_b = (a.pk, column.slug), (b.pk, column.slug)
        number_a, number_b = inputs.board.get(key_a), inputs.board.get(key_b)
        reason = _not_comparable(inputs, key_a, key_b)
        if reason:
            metrics.append(MetricDifference(column, number_a, number_b, None, reason=reason))
            continue
        totals_a, totals_b = inputs.totals[key_a], inputs.totals[key_b]
        both = sorted(set(totals_a.images.tolist()) & set(totals_b.images.tolist()) & set(position))
        if not both:
            metrics.append(MetricDifference(column, number_a, number_b, None, reason="no image scored for both"))
            continue
        drawn = weights if len(both) == len(shared) else weights[:, [position[i] for i in both]]
        difference = paired_system_difference(metric_aggregation(column.slug), totals_a, totals_b, drawn, both)
        metrics.append(MetricDifference(column, number_a, number_b, difference))
    metrics.sort(key=lambda m: (m.difference is None, m.column.family, m.column.name.lower()))
    return metrics


def _not_comparable(inputs: ComparisonInputs, key_a: tuple[int, str], key_b: tuple[int, str]) -> str:
    """Why the two systems' numbers under a metric cannot be compared, or ""."""
    version_a, version_b = inputs.versions.get(key_a), inputs.versions.get(key_b)
    if version_a is None or version_b is None or key_a not in inputs.board or key_b not in inputs.board:
        return "not scored for both systems"
    if version_a != version_b:
        return "the two systems were scored with different versions of this metric"
    if key_a not in inputs.totals or key_b not in inputs.totals:
        return "a system's per-caption statistics are missing"
    return ""


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
