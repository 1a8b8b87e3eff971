"""System-level means and agreement; acc_eq and tie calibration against brute force."""

from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from capbench_eval.metaeval.system_level import system_means
from capbench_eval.metaeval.ties import acc_eq, group_pairs, tie_calibrated_acc_eq


def test_system_level_means_correlation_and_agreement():
    systems = ["up-down"] * 3 + ["vinvl"] * 3 + ["human"] * 3
    human = [3, 4, 4, 4, 4, 5, 5, 5, 4]
    metric = [0.2, 0.3, 0.4, 0.5, 0.4, 0.6, 0.9, 0.8, 0.7]
    level = system_means(human, metric, systems)
    assert level.systems == ["human", "up-down", "vinvl"]
    assert level.human == pytest.approx([14 / 3, 11 / 3, 13 / 3])
    assert level.correlation(lambda h, m: stats.kendalltau(h, m).statistic) == pytest.approx(1.0)
    assert level.pairwise_agreement() == 1.0


def _brute(human, metric, groups, epsilon):
    accuracies = []
    for g in sorted(set(groups)):
        index = [i for i, x in enumerate(groups) if x == g]
        if len(index) < 2:
            continue
        right = 0
        for i, j in combinations(index, 2):
            dh, dm = human[i] - human[j], metric[i] - metric[j]
            tie_m = abs(dm) <= epsilon
            right += (dh == 0 and tie_m) or (dh != 0 and not tie_m and np.sign(dh) == np.sign(dm))
        accuracies.append(right / (len(index) * (len(index) - 1) / 2))
    return float(np.mean(accuracies))


def test_acc_eq_and_calibration_match_brute_force():
    rng = np.random.default_rng(2)
    groups = list(np.repeat(np.arange(40), 5))
    human = rng.integers(1, 4, 200).astype(float)
    metric = np.round(human + rng.normal(0, 0.8, 200), 1)
    pairs = group_pairs(human, metric, groups)
    for epsilon in (0.0, 0.1, 0.35, 1.0):
        assert acc_eq(pairs, epsilon) == pytest.approx(_brute(human, metric, groups, epsilon))
    best, epsilon = tie_calibrated_acc_eq(pairs)
    candidates = np.unique(pairs.gap)
    assert best == pytest.approx(max(_brute(human, metric, groups, e) for e in candidates))
    assert best == pytest.approx(_brute(human, metric, groups, epsilon))
    assert best >= acc_eq(pairs, 0.0)
