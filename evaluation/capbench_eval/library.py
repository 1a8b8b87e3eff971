"""The library's calls for a researcher's own scripts (docs/library.md): `score` a system's captions
under one metric, `correlate` a metric's scores with human judgments. Both give what CapBench's
boards show for the same input: the per-caption scores, the system's number formed as the board forms
it (capbench_eval.metaeval.system_value) with its 95% interval, and the metric's signature.

>>> from capbench_eval import correlate, score
>>> candidates = {
...     "1": "a dog runs across the grass",
...     "2": "a man rides a red bike down the road",
...     "3": "two children play in the snow",
... }
>>> references = {
...     "1": ["a dog is running on the grass", "a brown dog runs through a field"],
...     "2": ["a man is riding a bike on a road", "a cyclist rides down the street"],
...     "3": ["two kids are playing in the snow", "children play outside in winter"],
... }
>>> cider = score("cider_d", candidates, references)
>>> [round(value, 3) for value in cider.scores]  # per caption, native scale
[1.962, 1.579, 2.416]
>>> cider.shown()  # the system's number as a board cell shows it: points, 95% interval
'198.56 [157.90, 241.63]'
>>> cider.signature
'cider_d|v:2|n:4|sigma:6.0|tok:ptb-corenlp-3.4.1|refs:all|df:scored-set|sys:mean|capbench-eval:0.1.0'
>>> agreement = correlate([0.21, 0.55, 0.32, 0.90, 0.18, 0.61], [1, 3, 2, 4, 1, 4])
>>> print(agreement)
ratings/canonical@2: tau_b 93.09 [74.54, 100.00], tau_c 96.30 [55.56, 100.00], pearson 93.90 [85.91, 99.95], spearman 97.10 [77.46, 100.00]
>>> round(agreement["tau_b"].value, 4)
0.9309
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from capbench_eval import metrics
from capbench_eval.metaeval.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, Interval
from capbench_eval.metaeval.protocols import Protocol, dataset_protocols_of, protocol, rating_cells
from capbench_eval.metaeval.system_value import Aggregation, image_totals, system_number
from capbench_eval.metrics import CaptionRow, Metric, MetricUnavailable
from capbench_eval.signatures import signature

__all__ = ["Correlation", "Scores", "correlate", "score"]

Captions = Mapping[str, str] | Sequence[str]
References = Mapping[str, Sequence[str]] | Sequence[Sequence[str]]


@dataclass(frozen=True)
class Scores:
    """One system's captions under one metric. `scores` are per caption in input order, on the
    metric's native scale (NaN where the metric failed on a caption); `value`, `low`, `high` the
    system's number and its 95% interval on the same scale (None without a number or an interval);
    `points` what the boards multiply them by (×100 for 0–1 metrics)."""

    metric: str
    name: str
    ids: list[str]
    scores: list[float]
    value: float | None
    low: float | None
    high: float | None
    points: float
    signature: str
    images: int
    details: list[dict] | None = field(default=None, repr=False)

    def shown(self) -> str:
        """The number as a board cell reads it: points, 2 decimals, the interval in brackets."""
        if self.value is None:
            return "–"
        number = f"{self.value * self.points:.2f}"
        if self.low is None or self.high is None:
            return number
        return f"{number} [{self.low * self.points:.2f}, {self.high * self.points:.2f}]"

    def __str__(self) -> str:
        return f"{self.name} {self.shown()}  {self.signature}"


def score(
    metric: str | Metric,
    candidates: Captions,
    references: References | None = None,
    *,
    images: Mapping[str, object] | Sequence[object] | None = None,
    media: Mapping[str, str] | Sequence[str] | None = None,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
) -> Scores:
    """Score `candidates` (id → caption, or a list) against `references` (id → list of captions,
    or a list of lists in the same order; None for a reference-free metric) as one corpus, as
    COCO's toolkit scores a results file and the board scores a submission.

    `images`: each caption's image (the bootstrap draws images; captions of one image are drawn
    together); by default every caption is its own image. Given in the dataset's order (the
    `capbench references` file carries it) the interval is the board's to the last digit.
    `media`: each caption's image or video path, for the metrics that look at it.

    Raises ValueError naming the caption whose input is missing or malformed, and
    MetricUnavailable (with the reason) where the metric cannot run here (no Java, no weights)."""
    chosen = metrics.get(metric) if isinstance(metric, str) else metric
    chosen.require_available()
    rows = _rows(chosen, candidates, references, media)
    try:
        result = chosen.score(rows)
    except ModuleNotFoundError as error:  # a package its availability check did not import
        extra = f"pip install 'capbench-eval[{chosen.extra}]' or " if chosen.extra else ""
        raise MetricUnavailable(f"{chosen.name} needs the Python package {error.name!r} ({extra}install it)") from error
    values = np.asarray(result.scores, dtype=float)
    finite = np.isfinite(values)
    groups = _aligned(images, [row.id for row in rows], "images") if images is not None else [row.id for row in rows]
    kept_statistics = None
    if result.statistics is not None:
        kept_statistics = [stat for stat, keep in zip(result.statistics, finite, strict=True) if keep]
    aggregation = cast(Aggregation, chosen)  # (its aggregation a ClassVar: the same attribute)
    kept_images = np.asarray(groups, dtype=object)[finite].tolist()
    summed = image_totals(aggregation, values[finite], kept_statistics, kept_images)
    number = system_number(aggregation, summed, replicates=replicates, seed=seed)
    return Scores(
        metric=chosen.slug,
        name=chosen.name,
        ids=[row.id for row in rows],
        scores=[float(value) for value in values],
        value=number.value,
        low=number.low,
        high=number.high,
        points=chosen.points,
        signature=signature(chosen),
        images=number.images,
        details=result.details,
    )


def _rows(
    metric: Metric, candidates: Captions, references: References | None, media: Mapping | Sequence | None
) -> list[CaptionRow]:
    ids, texts = _keyed(candidates, "candidates")
    if references is None:
        if "references" in metric.needs:
            raise ValueError(f"{metric.name} compares with references: pass them")
        refs: list[tuple[str, ...]] = [()] * len(ids)
    else:
        given = _aligned(references, ids, "references")
        refs = [tuple(_texts(found, f"references of caption {key!r}")) for key, found in zip(ids, given, strict=True)]
    paths = _aligned(media, ids, "media") if media is not None else [None] * len(ids)
    if "media" in metric.needs and any(path is None for path in paths):
        raise ValueError(f"{metric.name} looks at each caption's image or video: pass `media`")
    return [
        CaptionRow(key, text, found, None if path is None else str(path))
        for key, text, found, path in zip(ids, texts, refs, paths, strict=True)
    ]


def _keyed(candidates: Captions, what: str) -> tuple[list[str], list[str]]:
    if isinstance(candidates, str):
        raise ValueError(f"{what}: a list or a mapping of captions, not one string")
    pairs = list(candidates.items()) if isinstance(candidates, Mapping) else list(enumerate(candidates))
    if not pairs:
        raise ValueError(f"{what}: no caption to score")
    ids = [str(key) for key, _ in pairs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{what}: two captions have the same id")
    for key, text in pairs:
        if not isinstance(text, str):
            raise ValueError(f"{what}: caption {key!r} is not a string")
    return ids, [text for _, text in pairs]


def _aligned(given: Mapping | Sequence, ids: list[str], what: str) -> list:
    """`given` (by id, or a list in the captions' order) in the captions' order."""
    if isinstance(given, Mapping):
        by_id = {str(key): value for key, value in given.items()}
        missing = [key for key in ids if key not in by_id]
        if missing:
            raise ValueError(f"{what}: none for caption {missing[0]!r} ({len(missing)} captions without)")
        return [by_id[key] for key in ids]
    if isinstance(given, str) or len(given) != len(ids):
        raise ValueError(f"{what}: one per caption ({len(ids)}), in the captions' order")
    return list(given)


def _texts(found: object, where: str) -> list[str]:
    if isinstance(found, str) or not isinstance(found, Sequence):
        raise ValueError(f"{where}: a list of captions")
    if not all(isinstance(text, str) for text in found):
        raise ValueError(f"{where}: every reference must be a string")
    return list(found)


@dataclass(frozen=True)
class Correlation:
    """A metric's agreement with human judgments under one protocol: each of its statistics
    (tau_b, tau_c, pearson, spearman) with its cluster-bootstrap 95% interval."""

    protocol: str
    statistics: dict[str, Interval]
    rows: int

    def __getitem__(self, statistic: str) -> Interval:
        return self.statistics[statistic]

    def __str__(self) -> str:
        cells = (
            f"{name} {cell.value * 100:.2f} [{cell.low * 100:.2f}, {cell.high * 100:.2f}]"
            for name, cell in self.statistics.items()
        )
        return f"{self.protocol}: " + ", ".join(cells)


def correlate(
    scores: Sequence[float],
    judgments: Sequence[float],
    *,
    protocol: str = "canonical",
    clusters: Sequence | None = None,
    annotators: Sequence | None = None,
) -> Correlation:
    """How a metric's per-row `scores` agree with the human `judgments` of the same rows (one
    rating per row; rows with a NaN on either side are left out), with the statistics, bootstrap
    and seed of `protocol`: "canonical" (tau_b, tau_c, Pearson, Spearman), or a dataset's
    published one, "DATASET/paper" (e.g. "flickr8k-expert/paper": tau_c first, as the papers
    print it). `clusters`: each row's image (the bootstrap draws images; default each row its own);
    `annotators`: each row's annotator, for a protocol that correlates annotators apart."""
    if len(scores) != len(judgments):
        raise ValueError(f"{len(scores)} scores and {len(judgments)} judgments: one of each per row")
    if len(scores) < 2:
        raise ValueError("at least two rows are needed to correlate")
    chosen = _protocol(protocol)
    groups = list(range(len(scores))) if clusters is None else list(clusters)
    if len(groups) != len(scores):
        raise ValueError("clusters: one per row")
    cells = rating_cells(chosen, judgments, scores, groups, annotators)
    kept = sum(1 for a, b in zip(scores, judgments, strict=True) if not (math.isnan(a) or math.isnan(b)))
    return Correlation(chosen.key, cells, kept)


def _protocol(name: str) -> Protocol:
    if name == "canonical":
        return dataset_protocols_of("", "ratings", "rating")[0]
    dataset, _, which = name.partition("/")
    try:
        return protocol(dataset, which or "paper")
    except KeyError as error:
        raise ValueError(error.args[0]) from None
