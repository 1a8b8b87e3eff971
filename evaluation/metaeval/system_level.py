"""System-level agreement: rank captioning systems by their mean human and mean metric scores.
Only meaningful where real systems exist (THumB: 5 systems, so mark the small n)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from evaluation.metaeval.bootstrap import Interval, cluster_bootstrap
from evaluation.metaeval.correlation import pearson
from evaluation.metaeval.kendall import kendall_tau_b


@dataclass(frozen=True)
class SystemLevel:
    systems: list[str]
    human: np.ndarray
    metric: np.ndarray

    def correlation(self, statistic: Callable[[np.ndarray, np.ndarray], float]) -> float:
        return statistic(self.human, self.metric)

    def pairwise_agreement(self) -> float:
        """Fraction of system pairs ordered alike (Kocmi et al. 2021); a tie with a tie agrees."""
        pairs = list(combinations(range(len(self.systems)), 2))
        if not pairs:
            return float("nan")
        agree = sum(
            np.sign(self.human[i] - self.human[j]) == np.sign(self.metric[i] - self.metric[j]) for i, j in pairs
        )
        return agree / len(pairs)


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
    is recomputed from the items drawn. NaN metric rows (failures) are left out."""
    human_all, metric_all = np.asarray(human, float), np.asarray(metric, float)
    keep = ~(np.isnan(human_all) | np.isnan(metric_all))
    human_kept, metric_kept = human_all[keep], metric_all[keep]
    system_ids, cluster_ids = np.asarray(systems)[keep], np.asarray(clusters)[keep]
    names, index = np.unique(system_ids, return_inverse=True)
    if len(names) < MIN_SYSTEMS:
        raise ValueError(f"system-level agreement needs at least {MIN_SYSTEMS} systems, got {len(names)}")

    def statistics(weights: np.ndarray | None) -> list[float]:
        w = np.ones(len(human_kept)) if weights is None else weights
        totals = np.bincount(index, weights=w, minlength=len(names))
        if (totals == 0).any():
            return [np.nan] * len(SYSTEM_STATISTICS)  # a system lost every item in this draw
        level = SystemLevel(
            list(names),
            np.bincount(index, weights=w * human_kept) / totals,
            np.bincount(index, weights=w * metric_kept) / totals,
        )
        return [level.correlation(pearson), level.correlation(kendall_tau_b), level.pairwise_agreement()]

    intervals = cluster_bootstrap(statistics, cluster_ids, replicates=replicates, seed=seed)
    return dict(zip(SYSTEM_STATISTICS, intervals, strict=True))
