"""System-level agreement: captioning systems ranked by their mean human rating and by their number
under a metric, formed as the captioner board forms it (capbench_eval.metaeval.system_value: corpus BLEU
and METEOR from summed statistics, the mean of per-caption scores otherwise). Only meaningful where
real systems exist (THumB: 5 systems, so mark the small n)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from capbench_eval.metaeval.bootstrap import Interval, cluster_bootstrap_blocks
from capbench_eval.metaeval.kendall import PairCountBlock, tau_b_values
from capbench_eval.metaeval.system_value import MEAN_OF_SCORES, Aggregation


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
    """system_level_cells for rows that each hold a human rating and a metric score (one row per
    judgment), each system's metric number the mean of its rows; a row whose either side is NaN
    (a failure) is left out."""
    human_all, metric_all = np.asarray(human, float), np.asarray(metric, float)
    keep = ~(np.isnan(human_all) | np.isnan(metric_all))
    system_ids, cluster_ids = np.asarray(systems)[keep], np.asarray(clusters)[keep]
    judged = JudgedRows(human_all[keep], system_ids, cluster_ids)
    scored = ScoredRows(MEAN_OF_SCORES.caption_totals(metric_all[keep], None), system_ids, cluster_ids)
    return system_level_cells(judged, scored, MEAN_OF_SCORES, replicates=replicates, seed=seed)


@dataclass(frozen=True)
class JudgedRows:
    """Human ratings, one per judgment: its value, its caption's system and its item (cluster)."""

    values: np.ndarray
    systems: np.ndarray
    clusters: np.ndarray


@dataclass(frozen=True)
class ScoredRows:
    """A metric's scored captions, each once: its caption_totals row (system_value), its system and
    its item (cluster)."""

    totals: np.ndarray
    systems: np.ndarray
    clusters: np.ndarray


def system_level_cells(
    judged: JudgedRows,
    scored: ScoredRows,
    metric: Aggregation,
    *,
    sign: float = 1.0,
    replicates: int,
    seed: int,
) -> dict[str, Interval]:
    """System-level Pearson, Kendall τ-b and pairwise agreement between each system's mean human
    rating and its number under the metric as the captioner board forms it (system_value: the mean
    of its per-caption scores, or the corpus statistic of their summed statistics), times `sign`
    (-1 where lower is better), with 95% intervals from resampling items: a replicate re-weights
    both sides' rows by their item's draw count. Only systems with both ratings and scores count.

    A replicate's sums are linear in its item multiplicities, so the rows are summed per (item,
    system) once and a block of replicates is a few matrix products."""
    names = np.array(sorted(set(judged.systems.tolist()) & set(scored.systems.tolist())))
    if len(names) < MIN_SYSTEMS:
        raise ValueError(f"system-level agreement needs at least {MIN_SYSTEMS} systems, got {len(names)}")
    judged_kept, scored_kept = np.isin(judged.systems, names), np.isin(scored.systems, names)
    found, cluster_of_row = np.unique(
        np.concatenate([judged.clusters[judged_kept], scored.clusters[scored_kept]]), return_inverse=True
    )
    cluster_of_row = cluster_of_row.ravel()
    judged_clusters, scored_clusters = np.split(cluster_of_row, [int(judged_kept.sum())])
    judged_systems = np.searchsorted(names, judged.systems[judged_kept])
    scored_systems = np.searchsorted(names, scored.systems[scored_kept])
    shape = (len(found), len(names))
    human_rows = _per_cell(judged_clusters, judged_systems, np.ones(len(judged_clusters)), shape)
    human_sums = _per_cell(judged_clusters, judged_systems, judged.values[judged_kept], shape)
    metric_rows = _per_cell(scored_clusters, scored_systems, np.ones(len(scored_clusters)), shape)
    width = scored.totals.shape[1]
    per_cell = np.zeros((shape[0], shape[1], width))
    np.add.at(per_cell, (scored_clusters, scored_systems), scored.totals[scored_kept])
    metric_totals = per_cell.reshape(shape[0], shape[1] * width)

    def statistics(counts: np.ndarray) -> np.ndarray:
        weights = counts.astype(float)
        rated, scored_count = weights @ human_rows, weights @ metric_rows
        with np.errstate(invalid="ignore", divide="ignore"):
            human = (weights @ human_sums) / rated
            numbers = metric.from_totals((weights @ metric_totals).reshape(len(weights) * shape[1], width))
            values = _system_statistics(human, sign * numbers.reshape(len(weights), shape[1]))
        values[((rated == 0) | (scored_count == 0)).any(axis=1)] = np.nan  # a system lost every item in this draw
        return values

    intervals, _ = cluster_bootstrap_blocks(statistics, cluster_of_row, replicates=replicates, seed=seed)
    return dict(zip(SYSTEM_STATISTICS, intervals, strict=True))


def _per_cell(clusters: np.ndarray, systems: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(clusters × systems) sums of `values`."""
    return np.bincount(clusters * shape[1] + systems, weights=values, minlength=shape[0] * shape[1]).reshape(shape)


def _system_statistics(human: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """(k × SYSTEM_STATISTICS) from (k × systems) numbers: Pearson (NaN where a side is constant),
    τ-b and pairwise agreement. Numbers within float noise of each other (SAME) are taken as equal:
    two systems with the same captions sum their scores in another order in a matrix product."""
    human, metric = _snapped(human), _snapped(metric)
    human_centred = human - human.mean(axis=1, keepdims=True)
    metric_centred = metric - metric.mean(axis=1, keepdims=True)
    human_spread = (human_centred * human_centred).sum(axis=1)
    metric_spread = (metric_centred * metric_centred).sum(axis=1)
    varied = (np.ptp(human, axis=1) > 0) & (np.ptp(metric, axis=1) > 0) & (human_spread > 0) & (metric_spread > 0)
    spread = np.sqrt(np.where(varied, human_spread * metric_spread, 1.0))
    pearson = np.where(varied, (human_centred * metric_centred).sum(axis=1) / spread, np.nan)
    tau_b, agreement = _system_pairs(human, metric)
    return np.column_stack([pearson, tau_b, agreement])


SAME = 1e-12  # relative difference below which two systems' numbers are one number


def _snapped(values: np.ndarray) -> np.ndarray:
    """Each row's values with those within SAME (relative to the row's largest) of its smallest
    value of their group made equal to it: float noise becomes a tie, a real difference stays."""
    out = np.array(values, dtype=float, copy=True)
    for row in out:
        finite = np.isfinite(row)
        if finite.sum() < 2:
            continue
        order = np.argsort(row[finite], kind="stable")
        kept = row[finite][order]
        tolerance = SAME * max(1.0, float(np.abs(kept).max()))
        for i in range(1, len(kept)):
            if kept[i] - kept[i - 1] <= tolerance:
                kept[i] = kept[i - 1]
        snapped = row[finite]
        snapped[order] = kept
        row[finite] = snapped
    return out


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
