"""Two captioners compared on the same images: the difference of their numbers under one metric with
a paired bootstrap interval and p-value. Each replicate draws images with replacement and both
systems are measured on the same draw, so what the two share (the image, its references) cancels
out; one weights matrix serves every metric, so the metrics' differences are paired with each other
too (docs/metaeval.md in this repository describes the bootstrap)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from capbench_eval.metaeval.bootstrap import DEFAULT_REPLICATES, DEFAULT_SEED, cluster_weights

# A system's number: with None, on every image once (a float); with a (replicates × images) weights
# matrix, one number per replicate (an array).
Statistic = Callable[[np.ndarray | None], "float | np.ndarray"]


@dataclass(frozen=True)
class PairedDifference:
    value: float  # a − b on every shared image
    low: float  # 95% percentile interval of a − b
    high: float
    p_value: float  # two-sided: how often the resampled difference falls on the other side of 0, doubled
    replicates: int  # replicates with a finite difference
    images: int


def image_weights(images: int, *, replicates: int = DEFAULT_REPLICATES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(replicates × images) draw counts: each replicate draws as many images as there are."""
    if images < 1:
        raise ValueError("a paired comparison needs at least one shared image")
    weights, _ = cluster_weights(range(images), replicates, seed)
    return weights.astype(np.int32)  # (counts are small: half the memory of int64)


def mean_statistic(values: np.ndarray) -> Statistic:
    """The mean of per-image values (a system's mean score)."""

    def statistic(weights: np.ndarray | None) -> float | np.ndarray:
        return float(values.mean()) if weights is None else (weights @ values) / weights.sum(axis=1)

    return statistic


def paired_difference(a: Statistic, b: Statistic, weights: np.ndarray, *, level: float = 0.95) -> PairedDifference:
    """a − b with its interval and two-sided p-value over the replicates of `weights`
    (image_weights: the same matrix for both systems, which is what pairs them)."""
    value = float(a(None)) - float(b(None))
    draws = np.asarray(a(weights), dtype=float) - np.asarray(b(weights), dtype=float)
    draws = draws[np.isfinite(draws)]
    if not len(draws):
        nan = float("nan")
        return PairedDifference(value, nan, nan, nan, 0, weights.shape[1])
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    # Twice the share of replicates at or beyond 0 on the side opposite the observed difference.
    if value > 0:
        p_value = min(1.0, 2 * float(np.mean(draws <= 0)))
    elif value < 0:
        p_value = min(1.0, 2 * float(np.mean(draws >= 0)))
    else:
        p_value = 1.0
    return PairedDifference(float(value), float(low), float(high), p_value, len(draws), weights.shape[1])
