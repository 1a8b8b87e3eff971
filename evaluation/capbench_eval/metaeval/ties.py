"""acc_eq (pairwise accuracy with ties, Deutsch, Foster & Freitag 2023) and its tie calibration,
item-wise: pairs are formed inside each group (e.g. the captions of one image) and the group
accuracies are averaged. A metric pair with |Δ| <= epsilon counts as a metric tie."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GroupPairs:
    gap: np.ndarray  # |Δ metric| per pair
    human_tie: np.ndarray  # Δ human == 0
    same_sign: np.ndarray  # sign(Δ human) == sign(Δ metric) for untied pairs
    weight: np.ndarray  # 1 / (groups · pairs in the group): group-averaged accuracy


def group_pairs(human: Sequence[float], metric: Sequence[float], groups: Sequence) -> GroupPairs:
    human_values, metric_values, group_ids = np.asarray(human, float), np.asarray(metric, float), np.asarray(groups)
    parts: dict[str, list[np.ndarray]] = {"gap": [], "human_tie": [], "same_sign": [], "weight": []}
    names = np.unique(group_ids)
    useful = [g for g in names if (group_ids == g).sum() >= 2]
    for name in useful:
        index = np.flatnonzero(group_ids == name)
        i, j = np.triu_indices(len(index), k=1)
        dh = human_values[index[i]] - human_values[index[j]]
        dm = metric_values[index[i]] - metric_values[index[j]]
        parts["gap"].append(np.abs(dm))
        parts["human_tie"].append(dh == 0)
        parts["same_sign"].append(np.sign(dh) == np.sign(dm))
        parts["weight"].append(np.full(len(i), 1.0 / (len(useful) * len(i))))
    return GroupPairs(*(np.concatenate(parts[key]) if parts[key] else np.array([]) for key in parts))


def acc_eq(pairs: GroupPairs, epsilon: float = 0.0) -> float:
    metric_tie = pairs.gap <= epsilon
    correct = np.where(pairs.human_tie, metric_tie, ~metric_tie & pairs.same_sign)
    return float(pairs.weight @ correct)


def tie_calibrated_acc_eq(pairs: GroupPairs) -> tuple[float, float]:
    """(best acc_eq, its epsilon): sweep epsilon over every distinct |Δ metric|; raising epsilon past
    a pair's gap turns it into a metric tie, gaining its weight if people tied it and losing it if
    the metric had ordered it right."""
    if len(pairs.gap) == 0:
        return float("nan"), 0.0
    order = np.argsort(pairs.gap, kind="stable")
    gap = pairs.gap[order]
    gain = np.where(pairs.human_tie[order], 1.0, np.where(pairs.same_sign[order], -1.0, 0.0)) * pairs.weight[order]
    base = acc_eq(pairs, -1.0)  # nothing tied
    totals = base + np.cumsum(gain)
    last_of_value = np.append(gap[1:] != gap[:-1], True)  # equal gaps tie together
    candidates = np.flatnonzero(last_of_value)
    best = candidates[np.argmax(totals[candidates])]
    return float(totals[best]), float(gap[best])
