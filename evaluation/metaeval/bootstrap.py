"""95% intervals by the cluster bootstrap: resample clusters (images), not rows, because the rows of
one image share its references and its annotators (metaeval.md). A replicate is a weight vector —
how often each row's cluster was drawn — so no data is copied."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_REPLICATES = 1000
DEFAULT_SEED = 12345


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float
    replicates: int
    level: float = 0.95


def cluster_weights(clusters: Sequence, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(replicates × rows) row weights; each replicate draws as many clusters as there are, with
    replacement. Also returns the cluster index of every row."""
    _, cluster_of_row = np.unique(np.asarray(clusters), return_inverse=True)
    count = int(cluster_of_row.max()) + 1
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(count, np.full(count, 1.0 / count), size=replicates)
    return draws[:, cluster_of_row], cluster_of_row


def cluster_bootstrap(
    statistic: Callable[[np.ndarray | None], Sequence[float]],
    clusters: Sequence,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> list[Interval]:
    """Percentile intervals of each value `statistic(weights)` returns (several statistics can share
    one pass over a replicate); `statistic(None)` gives the point estimates. NaN replicates (all
    tied) are left out and the count kept says how many remained."""
    return cluster_bootstrap_draws(statistic, clusters, replicates=replicates, seed=seed, level=level)[0]


def cluster_bootstrap_draws(
    statistic: Callable[[np.ndarray | None], Sequence[float]],
    clusters: Sequence,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
) -> tuple[list[Interval], np.ndarray]:
    """`cluster_bootstrap` plus the replicate values (replicates × statistics). Two metrics scored
    on the same rows with the same seed see the same resamples, so their draws are paired: the
    share of replicates in which one does not beat the other is a one-sided p-value."""
    weights, _ = cluster_weights(clusters, replicates, seed)
    draws = np.array([list(statistic(row)) for row in weights], dtype=float)
    tail = (1 - level) / 2 * 100
    intervals = []
    for value, column in zip(statistic(None), draws.T, strict=True):
        column = column[~np.isnan(column)]
        low, high = np.percentile(column, [tail, 100 - tail]) if len(column) else (np.nan, np.nan)
        intervals.append(
            Interval(value=float(value), low=float(low), high=float(high), replicates=len(column), level=level)
        )
    return intervals, draws
