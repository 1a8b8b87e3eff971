"""Is metric 1 better than metric 2 on these rows? Paired permutation test (PERM-BOTH, Deutsch et
al. 2021, as mt-metrics-eval runs it) and significance clusters (its AssignRanks rule)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Statistic = Callable[[np.ndarray, np.ndarray], float]


def _zscore(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else values - values.mean()


def permutation_p_value(
    human: np.ndarray,
    metric_1: np.ndarray,
    metric_2: np.ndarray,
    statistic: Statistic,
    *,
    clusters: Sequence | None = None,
    draws: int = 1000,
    seed: int = 4,
) -> float:
    """One-sided p for H0 "metric 2 is at least as good as metric 1": each draw swaps the
    (z-scored) scores of the two metrics with probability 1/2 per cluster (an image: its rows,
    duplicated per annotator, move together; each row alone when no clusters are given);
    p = #(Δ* ≥ Δ) / draws."""
    human = np.asarray(human, dtype=float)
    first, second = _zscore(np.asarray(metric_1, dtype=float)), _zscore(np.asarray(metric_2, dtype=float))
    observed = statistic(human, first) - statistic(human, second)
    if clusters is None:
        cluster_of_row = np.arange(len(human))
    else:
        cluster_of_row = np.unique(np.asarray(clusters), return_inverse=True)[1]
    count = int(cluster_of_row.max()) + 1 if len(human) else 0
    rng = np.random.default_rng(seed)
    at_least = 0
    for _ in range(draws):
        swap = (rng.random(count) < 0.5)[cluster_of_row]
        a, b = np.where(swap, second, first), np.where(swap, first, second)
        at_least += statistic(human, a) - statistic(human, b) >= observed
    return at_least / draws


def significance_clusters(values: Sequence[float], p_values: np.ndarray, *, alpha: float = 0.05) -> list[int]:
    """Ranks (1 = best cluster) for metrics already sorted best first. `p_values[i, j]` (i < j) is
    the p that metric i beats metric j. Walking down, metric j opens a new cluster iff some metric
    from the current cluster's start to j-1 beats it with p <= alpha (no multiple-comparison
    correction, as in mt-metrics-eval)."""
    if any(later > earlier for earlier, later in zip(values, values[1:], strict=False)):
        raise ValueError("metrics must be sorted best first")
    ranks, rank, start = [], 1, 0
    for j in range(len(values)):
        if j > 0 and any(p_values[i, j] <= alpha for i in range(start, j)):
            rank, start = rank + 1, j
        ranks.append(rank)
    return ranks


def paired_draws_p_values(draws: Sequence[np.ndarray]) -> np.ndarray:
    """From paired bootstrap draws of metrics sorted best first: `p[i, j]` (i < j) is the share of
    replicates in which metric i does not beat metric j (one-sided; NaN draws left out)."""
    count = len(draws)
    p_values = np.full((count, count), np.nan)
    for i in range(count):
        for j in range(i + 1, count):
            difference = np.asarray(draws[i], float) - np.asarray(draws[j], float)
            difference = difference[~np.isnan(difference)]
            p_values[i, j] = float(np.mean(difference <= 0)) if len(difference) else np.nan
    return p_values
