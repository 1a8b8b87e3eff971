"""Pairwise accuracy: does the metric prefer the caption people preferred? (Pascal-50S, FOIL)

Strict accuracy counts a metric tie as wrong; the secondary number gives a tie half a point; a
third convention gives the tie to the second caption (a "b wins unless a scores higher" reading of
`score_a > score_b`); the tie count is always reported (metaeval.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PairwiseAccuracy:
    strict: float
    ties_half: float
    ties: int
    pairs: int
    ties_second: float = float("nan")  # a tie counted for the second caption


def pairwise_accuracy(
    score_a: Sequence[float], score_b: Sequence[float], winner: Sequence[str], weights: np.ndarray | None = None
) -> PairwiseAccuracy:
    """`winner[i]` is "a" or "b" (pairs with a human tie or no winner must be filtered out first)."""
    a, b = np.asarray(score_a, dtype=float), np.asarray(score_b, dtype=float)
    first = np.array([w == "a" for w in winner])
    if not np.isin(np.asarray(winner), ["a", "b"]).all():
        raise ValueError("every pair needs a winner 'a' or 'b'")
    w = np.ones(len(a)) if weights is None else np.asarray(weights, dtype=float)
    correct = np.where(first, a > b, b > a)
    tied = a == b
    total = w.sum()
    if total == 0:
        return PairwiseAccuracy(float("nan"), float("nan"), 0, 0)
    return PairwiseAccuracy(
        strict=float(w @ correct / total),
        ties_half=float((w @ correct + 0.5 * (w @ tied)) / total),
        ties=int(tied.sum()),
        pairs=len(a),
        ties_second=float(w @ (correct | (tied & ~first)) / total),
    )


def accuracy_by_category(
    score_a: Sequence[float], score_b: Sequence[float], winner: Sequence[str], category: Sequence[str]
) -> dict[str, PairwiseAccuracy]:
    """Per category, plus "mean": the unweighted mean of the category accuracies (the papers' number)."""
    categories = np.asarray(category)
    a, b, winners = np.asarray(score_a), np.asarray(score_b), np.asarray(winner)
    results: dict[str, PairwiseAccuracy] = {}
    for name in sorted(set(categories.tolist())):
        mask = categories == name
        results[name] = pairwise_accuracy(a[mask], b[mask], winners[mask])
    parts = list(results.values())
    results["mean"] = PairwiseAccuracy(
        strict=float(np.mean([p.strict for p in parts])),
        ties_half=float(np.mean([p.ties_half for p in parts])),
        ties=sum(p.ties for p in parts),
        pairs=sum(p.pairs for p in parts),
        ties_second=float(np.mean([p.ties_second for p in parts])),
    )
    return results
