"""System-level agreement: rank captioning systems by their mean human and mean metric scores.
Only meaningful where real systems exist (THumB: 5 systems, so mark the small n)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.metaeval.bootstrap import Interval, cluster_bootstrap_blocks, cluster_index
from evaluation.metaeval.kendall import PairCountBlock, tau_b_values


@dataclass(frozen=True)
class SystemLevel:
    systems: list[str]
    human: np.ndarray
    metric: np.ndarray

    def correlation(self, statistic: Callable[[np.ndarray, np.ndarray], float]) -> float:
        return statistic(self.human, self.metric)

    def pairwise_agreement(self) -> float:
        """Fraction of system pairs ordered alike (Kocmi et al. 2021); a tie with a tie agrees."""
        if len(self.systems) < 2:
            return float("nan")
        return float(_system_pairs(self.human[None, :], self.metric[None, :])[1][0])


def system_means(human: Sequence[float], metric: Sequence[float], systems: Sequence[str]) -> SystemLevel:
    human_values, metric_values, system_ids = np.asarray(human, float), np.asarray(metric, float), np.asarray(systems)
    names = sorted(set(system_ids.tolist()))
    return SystemLevel(
        names,
        np.array([human_values[system_ids == s].mean() for s in names]),
        np.array([metric_values[system_ids == s].mean() for s in names]),
    )


SYSTEM_STATISTICS = ("pearson", "tau_b", "pairwise_agreement")
MIN_SYSTEMS = 3


def system_level_intervals(
    human: Sequence[float],
    metric: Sequence[float],
    systems: Sequence[str],
    clusters: Sequence,
    *,
    replicates: int,
    seed: int,
) -> dict[str, Interval]:
    """System-level Pearson, Kendall τ-b and pairwise agreement of per-system means, with 95%
    intervals from resampling items (clusters): a replicate re-weights rows, so each system's mean
    is recomputed from the items drawn. NaN metric rows (failures) are left out.

    A replicate's per-system sums are linear in its cluster multiplicities, so the rows are summed
    per (cluster, system) once and a block of replicates is three matrix products."""
    human_all, metric_all = np.asarray(human, float), np.asarray(metric, float)
    keep = ~(np.isnan(human_all) | np.isnan(metric_all))
    human_kept, metric_kept = human_all[keep], metric_all[keep]
    system_ids, cluster_of_row = np.asarray(systems)[keep], cluster_index(np.asarray(clusters)[keep])
    names, index = np.unique(system_ids, return_inverse=True)
    if len(names) < MIN_SYSTEMS:
        raise ValueError(f"system-level agreement needs at least {MIN_SYSTEMS} systems, got {len(names)}")
    cell = cluster_of_row * len(names) + index.ravel()
    shape = (int(cluster_of_row.max()) + 1, len(names))

    def per_cell(values: np.ndarray | None) -> np.ndarray:  # (clusters × systems) sums
        return np.bincount(cell, weights=values, minlength=shape[0] * shape[1]).reshape(shape)

    rows, human_sums, metric_sums = per_cell(None), per_cell(human_kept), per_cell(metric_kept)

    def statistics(counts: np.ndarray) -> np.ndarray:
        weights = counts.astype(float)
        totals = weights @ rows
        with np.errstate(invalid="ignore", divide="ignore"):
            values = _system_statistics((weights @ human_sums) / totals, (weights @ metric_sums) / totals)
        values[(totals == 0).any(axis=1)] = np.nan  # a system lost every item in this draw
        return values

    intervals, _ = cluster_bootstrap_blocks(statistics, cluster_of_row, replicates=replicates, seed=seed)
    return dict(zip(SYSTEM_STATISTICS, intervals, strict=True))


def _system_statistics(human: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """(k × SYSTEM_STATISTICS) from (k × systems) means: Pearson (NaN where a side is constant),
    τ-b and pairwise agreement."""
    human_centred = human - human.mean(axis=1, keepdims=True)
    metric_centred = metric - metric.mean(axis=1, keepdims=True)
    human_spread = (human_centred * human_centred).sum(axis=1)
    metric_spread = (metric_centred * metric_centred).sum(axis=1)
    varied = (np.ptp(human, axis=1) > 0) & (np.ptp(metric, axis=1) > 0) & (human_spread > 0) & (metric_spread > 0)
    spread = np.sqrt(np.where(varied, human_spread * metric_spread, 1.0))
    pearson = np.where(varied, (human_centred * metric_centred).sum(axis=1) / spread, np.nan)
    tau_b, agreement = _system_pairs(human, metric)
    return np.column_stack([pearson, tau_b, agreement])


def _system_pairs(human: np.ndarray, metric: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """τ-b and pairwise agreement of each row of (k × systems) means, from the signs of the
    differences of every pair of systems."""
    first, second = np.triu_indices(human.shape[1], k=1)
    human_sign = np.sign(human[:, first] - human[:, second])
    metric_sign = np.sign(metric[:, first] - metric[:, second])
    agree = human_sign * metric_sign

    def count(mask: np.ndarray) -> np.ndarray:
        return mask.sum(axis=1).astype(float)

    tied_both = count((human_sign == 0) & (metric_sign == 0))
    counts = PairCountBlock(
        concordant=count(agree > 0),
        discordant=count(agree < 0),
        tied_human=count((human_sign == 0) & (metric_sign != 0)),
        tied_metric=count((human_sign != 0) & (metric_sign == 0)),
        tied_both=tied_both,
        rows=np.full(len(human), float(human.shape[1])),
        pairs=np.full(len(human), float(len(first))),
        distinct_human=np.zeros(len(human), dtype=np.int64),  # not used by τ-b
        distinct_metric=np.zeros(len(human), dtype=np.int64),
    )
    return tau_b_values(counts), (counts.concordant + tied_both) / len(first)
