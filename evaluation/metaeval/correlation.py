"""Pearson and Spearman with row weights (bootstrap multiplicities), equal to scipy on copies."""

from __future__ import annotations

import math

import numpy as np


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
