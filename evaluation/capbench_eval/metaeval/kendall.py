"""Kendall's tau-b and tau-c from weighted pair counts.

Weights are row multiplicities: a row of weight k counts as k copies of itself, so a bootstrap
replicate is a weight vector over the original rows, never a copied array. Copies of one row form
pairs tied in both variables.

The counts come from `ranked.RankedRows`, which sorts the rows once and then counts any number of
weightings (a block of bootstrap replicates) at once: O(n log2 k) per weighting, k the number of
distinct values of the variable with fewer of them (human scales have 4 to 12), and O(n log n) when
both have many.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from capbench_eval.metaeval.ranked import RankedRows, Weighed


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


@dataclass(frozen=True)
class PairCountBlock:
    """`PairCounts` of k weightings of the same rows: every field is an array of k values."""

    concordant: np.ndarray
    discordant: np.ndarray
    tied_human: np.ndarray
    tied_metric: np.ndarray
    tied_both: np.ndarray
    rows: np.ndarray
    pairs: np.ndarray
    distinct_human: np.ndarray
    distinct_metric: np.ndarray

    def __getitem__(self, index: int) -> PairCounts:
        """The counts of one weighting."""
        return PairCounts(
            concordant=float(self.concordant[index]),
            discordant=float(self.discordant[index]),
            tied_human=float(self.tied_human[index]),
            tied_metric=float(self.tied_metric[index]),
            tied_both=float(self.tied_both[index]),
            rows=float(self.rows[index]),
            pairs=float(self.pairs[index]),
            distinct_human=int(self.distinct_human[index]),
            distinct_metric=int(self.distinct_metric[index]),
        )


def pair_count_block(weighed: Weighed) -> PairCountBlock:
    """The pair counts of a block weighed by `RankedRows(human, metric, ...)` (human first)."""
    rows = weighed.total.astype(float)
    pairs = (rows * rows - weighed.squares) / 2
    tied_human_all = (weighed.first.within - weighed.squares) / 2  # Σ over values of (S² − Σw²)/2
    tied_metric_all = (weighed.second.within - weighed.squares) / 2
    tied_both, discordant = weighed.tied_both.astype(float), weighed.discordant.astype(float)
    untied = pairs - tied_human_all - tied_metric_all + tied_both
    return PairCountBlock(
        concordant=untied - discordant,
        discordant=discordant,
        tied_human=tied_human_all - tied_both,
        tied_metric=tied_metric_all - tied_both,
        tied_both=tied_both,
        rows=rows,
        pairs=pairs,
        distinct_human=weighed.first.distinct,
        distinct_metric=weighed.second.distinct,
    )


def pair_counts(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> PairCounts:
    human, metric = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    if human.shape != metric.shape or human.ndim != 1:
        raise ValueError(f"human and metric must be 1-D of one length, got {human.shape} and {metric.shape}")
    if np.isnan(human).any() or np.isnan(metric).any():
        raise ValueError("NaN in the scores: filter missing values out of both vectors first")
    weights = np.ones(len(human), dtype=np.int64) if weights is None else np.asarray(weights)
    if weights.dtype.kind not in "biu":
        weights = weights.astype(float)
    if weights.shape != human.shape or (weights < 0).any():
        raise ValueError("weights must be non-negative, one per row")
    return pair_count_block(RankedRows(human, metric).weigh(weights[None, :]))[0]


def kendall_tau_b(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> float:
    """(C − D) / √((N − T_metric − T_both)(N − T_human − T_both)); NaN when either side is all tied."""
    return tau_b_from_counts(pair_counts(human, metric, weights))


def kendall_tau_c(human: np.ndarray, metric: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Stuart's tau-c: 2(C − D) / (n²(m − 1)/m), m = min(distinct human, distinct metric)."""
    return tau_c_from_counts(pair_counts(human, metric, weights))


def tau_b_from_counts(counts: PairCounts) -> float:
    return float(tau_b_values(counts))


def tau_c_from_counts(counts: PairCounts) -> float:
    return float(tau_c_values(counts))


def tau_b_values(counts: PairCounts | PairCountBlock) -> np.ndarray:
    """tau-b of each weighting (a 0-d array for one `PairCounts`)."""
    denominator = np.asarray(
        (counts.pairs - counts.tied_metric - counts.tied_both) * (counts.pairs - counts.tied_human - counts.tied_both)
    )
    positive = denominator > 0
    return np.where(
        positive,
        np.subtract(counts.concordant, counts.discordant) / np.sqrt(np.where(positive, denominator, 1.0)),
        np.nan,
    )


def tau_c_values(counts: PairCounts | PairCountBlock) -> np.ndarray:
    """tau-c of each weighting (a 0-d array for one `PairCounts`)."""
    m = np.minimum(counts.distinct_human, counts.distinct_metric)
    spread = np.where(m >= 2, np.asarray(counts.rows) ** 2 * (m - 1) / np.maximum(m, 1), 1.0)
    return np.where(m >= 2, 2 * np.subtract(counts.concordant, counts.discordant) / spread, np.nan)
