"""Kendall's tau-b and tau-c from weighted pair counts.

Weights are row multiplicities: a row of weight k counts as k copies of itself, so a bootstrap
replicate is a weight vector over the original rows, never a copied array. Copies of one row form
pairs tied in both variables.

The discordant count runs in O(n + k·r) where k is the number of distinct values of the variable
with fewer of them (human scales have 4 to 12) and r the distinct values of the other; when both
have many distinct values, a Fenwick tree does it in O(n log n).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

LEVELS_LIMIT = 256


@dataclass(frozen=True)
class PairCounts:
    """Weighted pair counts: concordant, discordant, tied only in human, tied only in metric,
    tied in both; `rows` is the weighted number of rows and `pairs` the number of pairs."""

    concordant: float
    discordant: float
    tied_human: float
    tied_metric: float
    tied_both: float
    rows: float
    pairs: float
    distinct_human: int
    distinct_metric: int


def pair_counts(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> PairCounts:
    human, metric = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 1:
        raise ValueError(f"human and metric must be 1-D of one length, got {human.shape} and {metric.shape}")
    if np.isnan(human).any() or np.isnan(metric).any():
        raise ValueError("NaN in the scores: filter missing values out of both vectors first")
    weights = np.ones(len(human)) if weights is None else np.asarray(weights, dtype=float)
    if weights.shape != human.shape or (weights < 0).any():
        raise ValueError("weights must be non-negative, one per row")
    keep = weights > 0
    human, metric, weights = human[keep], metric[keep], weights[keep]
    human_rank = np.unique(human, return_inverse=True)[1]
    metric_rank = np.unique(metric, return_inverse=True)[1]
    rows = weights.sum()
    pairs = (rows * rows - (weights * weights).sum()) / 2
    tied_human_all = _tied_pairs(human_rank, weights)
    tied_metric_all = _tied_pairs(metric_rank, weights)
    tied_both = _tied_pairs(human_rank * (metric_rank.max(initial=0) + 1) + metric_rank, weights)
    discordant = _discordant(human_rank, metric_rank, weights)
    untied = pairs - tied_human_all - tied_metric_all + tied_both
    return PairCounts(
        concordant=untied - discordant,
        discordant=discordant,
        tied_human=tied_human_all - tied_both,
        tied_metric=tied_metric_all - tied_both,
        tied_both=tied_both,
        rows=rows,
        pairs=pairs,
        distinct_human=int(human_rank.max(initial=-1) + 1),
        distinct_metric=int(metric_rank.max(initial=-1) + 1),
    )


def kendall_tau_b(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> float:
    """(C − D) / √((N − T_metric − T_both)(N − T_human − T_both)); NaN when either side is all tied."""
    return tau_b_from_counts(pair_counts(human, metric, weights))


def kendall_tau_c(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Stuart's tau-c: 2(C − D) / (n²(m − 1)/m), m = min(distinct human, distinct metric)."""
    return tau_c_from_counts(pair_counts(human, metric, weights))


def tau_b_from_counts(counts: PairCounts) -> float:
    denominator = (counts.pairs - counts.tied_metric - counts.tied_both) * (
        counts.pairs - counts.tied_human - counts.tied_both
    )
    if denominator <= 0:
        return math.nan
    return (counts.concordant - counts.discordant) / math.sqrt(denominator)


def tau_c_from_counts(counts: PairCounts) -> float:
    m = min(counts.distinct_human, counts.distinct_metric)
    if m < 2:
        return math.nan
    return 2 * (counts.concordant - counts.discordant) / (counts.rows**2 * (m - 1) / m)


def _tied_pairs(codes: np.ndarray, weights: np.ndarray) -> float:
    """Σ over groups of equal code of (S² − Σw²)/2: the pairs inside each group."""
    if len(codes) == 0:
        return 0.0
    sums = np.bincount(codes, weights=weights)
    squares = np.bincount(codes, weights=weights * weights)
    return float((sums * sums - squares).sum() / 2)


def _discordant(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """Σ w_i·w_j over pairs with x_i < x_j and y_i > y_j (x, y dense ranks)."""
    if len(x) == 0:
        return 0.0
    levels_x, levels_y = int(x.max()) + 1, int(y.max()) + 1
    if min(levels_x, levels_y) <= LEVELS_LIMIT:
        if levels_x > levels_y:  # discordance is symmetric in the two variables
            x, y, levels_x, levels_y = y, x, levels_y, levels_x
        table = np.bincount(x * levels_y + y, weights=w, minlength=levels_x * levels_y)
        table = table.reshape(levels_x, levels_y)
        # below[l, r]: weight of rows with x-level < l and y-rank > r.
        lower = np.cumsum(table, axis=0) - table
        above = np.cumsum(lower[:, ::-1], axis=1)[:, ::-1] - lower
        return float((table * above).sum())
    return _discordant_fenwick(x, y, w)


def _discordant_fenwick(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    order = np.lexsort((y, x))
    x, y, w = x[order].tolist(), y[order].tolist(), w[order].tolist()
    size = max(y) + 1
    tree = [0.0] * (size + 1)
    inserted = 0.0
    discordant = 0.0
    start = 0
    while start < len(x):
        end = start
        while end < len(x) and x[end] == x[start]:
            end += 1
        for i in range(start, end):  # rows with a smaller x and a larger y
            position, at_most = y[i] + 1, 0.0
            while position > 0:
                at_most += tree[position]
                position -= position & -position
            discordant += w[i] * (inserted - at_most)
        for i in range(start, end):
            position = y[i] + 1
            while position <= size:
                tree[position] += w[i]
                position += position & -position
            inserted += w[i]
        start = end
    return discordant
