"""Pearson and Spearman with row weights (bootstrap multiplicities), equal to scipy on copies: one
weighting at a time (`pearson`, `spearman`), or a block of them from `ranked.RankedRows`
(`pearson_values`, `spearman_values`)."""

from __future__ import annotations

import math

import numpy as np

from capbench_eval.metaeval.ranked import Weighed


def _weights(n: int, weights: np.ndarray | None) -> np.ndarray:
    return np.ones(n) if weights is None else np.asarray(weights, dtype=float)


def pearson(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Weighted Pearson r; NaN when either side is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = _weights(len(x), weights)
    total = w.sum()
    if total <= 0:
        return math.nan
    dx, dy = x - (w @ x) / total, y - (w @ y) / total
    sxx, syy = w @ (dx * dx), w @ (dy * dy)
    if sxx <= 0 or syy <= 0:
        return math.nan
    return float((w @ (dx * dy)) / math.sqrt(sxx * syy))


def weighted_midranks(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The mid-rank each row would get among its weighted copies (ties share the average rank)."""
    order = np.argsort(values, kind="stable")
    distinct, inverse = np.unique(values[order], return_inverse=True)
    group_weight = np.bincount(inverse, weights=weights[order], minlength=len(distinct))
    before = np.cumsum(group_weight) - group_weight
    ranks = np.empty(len(values))
    ranks[order] = (before + (group_weight + 1) / 2)[inverse]
    return ranks


def spearman(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    w = _weights(len(x), weights)
    return pearson(weighted_midranks(x, w), weighted_midranks(y, w), w)


def pearson_values(weighed: Weighed) -> np.ndarray:
    """Weighted Pearson r of each weighting of a `RankedRows` block weighed with `values=True`,
    from its weighted sums of the centred values, their squares and products; NaN where a
    weighting leaves either side constant."""
    if weighed.moments is None:
        raise ValueError("weigh the block with values=True")
    total = weighed.total.astype(float)
    first, second, first_squares, second_squares, products = weighed.moments.T
    with np.errstate(invalid="ignore", divide="ignore"):
        spread_first = first_squares - first * first / total
        spread_second = second_squares - second * second / total
        covariance = products - first * second / total
    varied = _varied(weighed) & (spread_first > 0) & (spread_second > 0)
    return np.where(varied, covariance / np.sqrt(np.where(varied, spread_first * spread_second, 1.0)), np.nan)


def spearman_values(weighed: Weighed) -> np.ndarray:
    """Weighted Spearman ρ (Pearson r of the weighted mid-ranks) of each weighting of a `RankedRows`
    block weighed with `ranks=True`; NaN where a weighting leaves either side constant."""
    if weighed.rank_products is None or weighed.first.rank_squares is None or weighed.second.rank_squares is None:
        raise ValueError("weigh the block with ranks=True")
    varied = _varied(weighed)
    spread = weighed.first.rank_squares.astype(float) * weighed.second.rank_squares.astype(float)
    return np.where(varied, weighed.rank_products / np.sqrt(np.where(varied, spread, 1.0)), np.nan)


def _varied(weighed: Weighed) -> np.ndarray:
    """Weightings under which both sides take two values or more."""
    return (weighed.first.distinct > 1) & (weighed.second.distinct > 1)
