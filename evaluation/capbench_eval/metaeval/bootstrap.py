"""95% intervals by the cluster bootstrap: resample clusters (images), not rows, because the rows of
one image share its references and its annotators (metaeval.md). A replicate is a weight vector —
how often each row's cluster was drawn — so no data is copied."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_REPLICATES = 1000
DEFAULT_SEED = 12345
# Cells of one block of replicates × rows held at a time: 2**19 int64 are 4 MB, so that the arrays of a
# block stay in the cache (at 130,000 rows, 4 replicates a block ran twice as fast as 16).
BLOCK_CELLS = 2**19
# The last cluster draws are kept while they take at most this many bytes as uint8 (cluster_draws).
KEEP_BYTES = 32 * 2**20
_kept: dict[tuple[int, int, int], np.ndarray] = {}


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float
    replicates: int
    level: float = 0.95


def cluster_index(clusters: Sequence) -> np.ndarray:
    """Each row's cluster as 0, 1, … in np.unique's order: the columns of `cluster_draws`."""
    return np.unique(np.asarray(clusters), return_inverse=True)[1].ravel()


def cluster_draws(count: int, replicates: int, seed: int, *, block: int | None = None) -> Iterator[np.ndarray]:
    """The (replicates × count) multiplicities of `count` clusters, each replicate drawing `count`
    clusters with replacement (multinomial counts), in blocks of at most `block` replicates.

    numpy draws one replicate after another from the generator, so the blocks are the rows of one
    `multinomial(..., size=replicates)` call whatever their size: a seed gives the same replicates.
    Drawing is most of the cost at 1,000 × 26,000 (seconds), and every cell of a dataset resamples
    the same clusters with the same seed (each protocol, dimension and the system level), so the
    last draws are kept (as uint8 when they fit, up to KEEP_BYTES)."""
    key = (count, replicates, seed)
    block = max(1, block or replicates)
    kept = _kept.get(key)
    if kept is None and replicates * count <= KEEP_BYTES:
        draws = np.random.default_rng(seed).multinomial(count, np.full(count, 1.0 / count), size=replicates)
        kept = draws.astype(np.uint8) if draws.max(initial=0) <= np.iinfo(np.uint8).max else None
        if kept is not None:
            _kept.clear()
            _kept[key] = kept
        else:
            kept = draws
    if kept is not None:
        for start in range(0, replicates, block):
            yield kept[start : start + block].astype(np.int64)
        return
    rng = np.random.default_rng(seed)
    probabilities = np.full(count, 1.0 / count)
    for start in range(0, replicates, block):
        yield rng.multinomial(count, probabilities, size=min(block, replicates - start))


def forget_draws() -> None:
    """Drop the kept draws (a benchmark timing the draws themselves)."""
    _kept.clear()


def cluster_weights(clusters: Sequence, replicates: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(replicates × rows) row weights; each replicate draws as many clusters as there are, with
    replacement. Also returns the cluster index of every row."""
    cluster_of_row = cluster_index(clusters)
    count = int(cluster_of_row.max()) + 1
    draws = np.concatenate([*cluster_draws(count, replicates, seed), np.zeros((0, count), dtype=np.int64)])
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
    cluster_of_row = cluster_index(clusters)

    def block_statistic(counts: np.ndarray) -> np.ndarray:
        return np.array([list(statistic(row)) for row in counts[:, cluster_of_row]], dtype=float)

    point = np.asarray(list(statistic(None)), dtype=float)
    return cluster_bootstrap_blocks(
        block_statistic, cluster_of_row, replicates=replicates, seed=seed, level=level, point=point
    )


def cluster_bootstrap_blocks(
    statistics: Callable[[np.ndarray], np.ndarray],
    cluster_of_row: np.ndarray,
    *,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = DEFAULT_SEED,
    level: float = 0.95,
    point: np.ndarray | None = None,
) -> tuple[list[Interval], np.ndarray]:
    """`cluster_bootstrap_draws` for a statistic that takes a block of replicates at once:
    `statistics(counts)` gets a (k × clusters) block of cluster multiplicities (row i's weight in
    replicate r is `counts[r, cluster_of_row[i]]`; `cluster_index` numbers the clusters) and returns
    (k × statistics). The point estimates are `point`, or the statistics of one block of ones (every
    cluster once). The replicates are those of `cluster_weights` with the same seed."""
    count = int(cluster_of_row.max()) + 1
    if point is None:
        point = statistics(np.ones((1, count), dtype=np.int64))[0]
    block = max(1, BLOCK_CELLS // max(count, len(cluster_of_row)))
    draws = np.concatenate(
        [
            np.asarray(statistics(counts), dtype=float).reshape(len(counts), len(point))
            for counts in cluster_draws(count, replicates, seed, block=block)
        ]
        or [np.zeros((0, len(point)))]
    )
    return _percentile_intervals(point, draws, level), draws


def _percentile_intervals(point: np.ndarray, draws: np.ndarray, level: float = 0.95) -> list[Interval]:
    """Per column of `draws` (replicates × statistics): the percentile interval of its non-NaN
    replicates around the point estimate."""
    tail = (1 - level) / 2 * 100
    intervals = []
    for value, column in zip(point, draws.T, strict=True):
        column = column[~np.isnan(column)]
        low, high = np.percentile(column, [tail, 100 - tail]) if len(column) else (np.nan, np.nan)
        intervals.append(
            Interval(value=float(value), low=float(low), high=float(high), replicates=len(column), level=level)
        )
    return intervals
