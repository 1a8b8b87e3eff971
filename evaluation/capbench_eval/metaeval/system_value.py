"""A system's number under one metric, its 95% interval, and the paired difference of two systems'
numbers: the one definition every board, page, download and correlation reads (docs/metrics.md, "A
system's number").

A metric says how a system's number is formed from its captions' scores (`Metric.aggregation`): the
mean of the per-caption scores, or its corpus statistic over their summed per-caption statistics
(corpus BLEU, Meteor's aggregate). Both are a function of sums over captions (`caption_totals`, then
`from_totals`), so the captions of one image are summed once into that image's totals, and a
bootstrap replicate, which draws images with replacement, is one matrix product: its weights ×
the images' totals. The interval is the percentile interval of those replicates; the images, not the
captions, are drawn, because the captions of one image share its references."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from capbench_eval.metaeval.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, cluster_draws
from capbench_eval.metaeval.paired import PairedDifference, Statistic, paired_difference
from capbench_eval.metrics.base import MEAN, mean_caption_totals, mean_from_totals


class Aggregation(Protocol):
    """What forms a system's number: a registered metric, or MEAN_OF_SCORES for scores no
    registered metric computed (a researcher's uploaded ones)."""

    aggregation: str

    def caption_totals(self, scores: np.ndarray, statistics: Sequence | None) -> np.ndarray: ...

    def from_totals(self, totals: np.ndarray) -> np.ndarray: ...


class _MeanOfScores:
    """The mean of the per-caption scores (Metric's own default), for scores of no registered metric."""

    aggregation = MEAN

    def caption_totals(self, scores: np.ndarray, statistics: Sequence | None) -> np.ndarray:
        return mean_caption_totals(scores)

    def from_totals(self, totals: np.ndarray) -> np.ndarray:
        return mean_from_totals(totals)


MEAN_OF_SCORES: Aggregation = _MeanOfScores()


@dataclass(frozen=True)
class ImageTotals:
    """One system's scored captions summed per image: `images` (sorted ids) and their (images × k)
    `totals`; `captions` counted."""

    images: np.ndarray
    totals: np.ndarray
    captions: int

    def over(self, images: Sequence) -> np.ndarray:
        """(len(images) × k) the totals of `images`, in their order (every one of them captioned)."""
        position = {image: index for index, image in enumerate(self.images.tolist())}
        return self.totals[[position[image] for image in images]]


def image_totals(
    metric: Aggregation, scores: Sequence[float] | np.ndarray, statistics: Sequence | None, images: Sequence
) -> ImageTotals:
    """A system's captions (each one's finite score, its statistics where the metric sums them, and
    its image) summed per image. Raises ValueError when a corpus metric lacks a caption's statistics."""
    values = np.asarray(scores, dtype=float)
    if len(values) != len(images):
        raise ValueError("one image per score")
    per_caption = metric.caption_totals(values, statistics)
    found, index = np.unique(np.asarray(images), return_inverse=True)
    summed = np.zeros((len(found), per_caption.shape[1]))
    np.add.at(summed, index.ravel(), per_caption)
    return ImageTotals(found, summed, len(values))


@dataclass(frozen=True)
class SystemNumber:
    """A system's number on the metric's native scale (0–1 for most), with its 95% interval (None
    where fewer than two images were drawn from, or no replicate had a number)."""

    value: float | None
    low: float | None
    high: float | None
    images: int
    captions: int


def totals_statistic(metric: Aggregation, totals: np.ndarray) -> Statistic:
    """The system's number as a function of image weights: None counts every image once (a float);
    a (replicates × images) weights matrix gives one number per replicate."""

    def statistic(weights: np.ndarray | None) -> float | np.ndarray:
        if weights is None:
            return float(metric.from_totals(totals.sum(axis=0))[0])
        return metric.from_totals(np.asarray(weights, dtype=float) @ totals)

    return statistic


def system_number(
    metric: Aggregation,
    summed: ImageTotals,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> SystemNumber:
    """The number over every image once, and the percentile interval of `replicates` draws of as
    many images with replacement (NaN replicates left out)."""
    if not len(summed.images):
        return SystemNumber(None, None, None, 0, summed.captions)
    statistic = totals_statistic(metric, summed.totals)
    value = _finite(float(statistic(None)))
    low = high = None
    if len(summed.images) > 1 and value is not None:
        draws = np.concatenate(
            [
                np.asarray(statistic(counts), dtype=float)
                for counts in cluster_draws(len(summed.images), replicates, seed)
            ]
        )
        draws = draws[np.isfinite(draws)]
        if len(draws):
            tail = (1 - level) / 2 * 100
            low, high = (float(bound) for bound in np.percentile(draws, [tail, 100 - tail]))
    return SystemNumber(value, low, high, len(summed.images), summed.captions)


def paired_system_difference(
    metric: Aggregation, a: ImageTotals, b: ImageTotals, weights: np.ndarray, shared: Sequence
) -> PairedDifference:
    """a − b over the `shared` images (both systems captioned them) with its paired interval and
    p-value: both numbers formed as the board forms them (system_number), on the same draw of
    images (`weights`: replicates × len(shared), capbench_eval.metaeval.paired.image_weights)."""
    return paired_difference(
        totals_statistic(metric, a.over(shared)),
        totals_statistic(metric, b.over(shared)),
        weights,
    )


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
