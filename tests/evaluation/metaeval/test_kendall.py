"""Kendall tau-b / tau-c against scipy, weights against explicit copies, few and many levels."""

import math

import numpy as np
import pytest
from scipy import stats

from capbench_eval.metaeval.kendall import (
    kendall_tau_b,
    kendall_tau_c,
    pair_counts,
    tau_b_from_counts,
    tau_c_from_counts,
)


def _data(seed: int, n: int, human_levels: int, metric_levels: int):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, human_levels + 1, n).astype(float)
    metric = np.round(human + rng.normal(0, 1.5, n), 0 if metric_levels < n else 6)
    return human, metric


@pytest.mark.parametrize("seed, n, hl, ml", [(0, 50, 4, 10), (1, 500, 12, 500), (2, 2000, 4, 2000), (3, 30, 2, 3)])
def test_matches_scipy(seed, n, hl, ml):
    human, metric = _data(seed, n, hl, ml)
    assert kendall_tau_b(human, metric) == pytest.approx(stats.kendalltau(human, metric).statistic, abs=1e-12)
    assert kendall_tau_c(human, metric) == pytest.approx(
        stats.kendalltau(human, metric, variant="c").statistic, abs=1e-12
    )


def test_weights_equal_explicit_copies():
    human, metric = _data(4, 300, 4, 300)
    weights = np.random.default_rng(5).integers(0, 4, 300)
    copies = np.repeat(np.arange(300), weights)
    assert kendall_tau_b(human, metric, weights) == pytest.approx(
        stats.kendalltau(human[copies], metric[copies]).statistic, abs=1e-12
    )
    assert kendall_tau_c(human, metric, weights) == pytest.approx(
        stats.kendalltau(human[copies], metric[copies], variant="c").statistic, abs=1e-12
    )


def test_many_levels_on_both_sides_match_scipy_on_copies():
    """Neither variable has few values: the bit levels of the rank run to log2(700)."""
    human = np.random.default_rng(6).normal(size=700)
    metric = np.round(human + np.random.default_rng(7).normal(size=700), 1)
    weights = np.random.default_rng(8).integers(0, 3, 700)
    counts = pair_counts(human, metric, weights)
    assert counts.distinct_human == (weights > 0).sum()
    assert counts.distinct_metric > 40
    copies = np.repeat(np.arange(700), weights)
    assert tau_b_from_counts(counts) == pytest.approx(
        stats.kendalltau(human[copies], metric[copies]).statistic, abs=1e-12
    )
    assert tau_c_from_counts(counts) == pytest.approx(
        stats.kendalltau(human[copies], metric[copies], variant="c").statistic, abs=1e-12
    )


def test_float_weights_count_like_integer_ones():
    human, metric = _data(9, 400, 5, 400)
    weights = np.random.default_rng(10).integers(0, 4, 400)
    assert pair_counts(human, metric, weights.astype(float)) == pair_counts(human, metric, weights)
    assert kendall_tau_b(human, metric, weights * 0.5) == pytest.approx(kendall_tau_b(human, metric, weights))


def test_counts_partition_all_pairs():
    human = np.array([1, 1, 2, 2, 3])
    metric = np.array([0.1, 0.1, 0.3, 0.2, 0.2])
    c = pair_counts(human, metric)
    assert (c.concordant, c.discordant, c.tied_human, c.tied_metric, c.tied_both) == (6, 1, 1, 1, 1)
    assert c.concordant + c.discordant + c.tied_human + c.tied_metric + c.tied_both == c.pairs == 10


def test_all_tied_is_nan_and_bad_input_is_refused():
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))
    assert math.isnan(kendall_tau_c([1, 2, 3], [5, 5, 5]))
    with pytest.raises(ValueError, match="NaN"):
        kendall_tau_b([1, 2], [1, float("nan")])
    with pytest.raises(ValueError, match="one length"):
        kendall_tau_b([1, 2], [1, 2, 3])


def test_empty_rows_count_nothing():
    counts = pair_counts(np.zeros(0), np.zeros(0))
    assert (counts.pairs, counts.rows, counts.distinct_human, counts.distinct_metric) == (0, 0, 0, 0)
    assert math.isnan(tau_b_from_counts(counts))
    assert math.isnan(tau_c_from_counts(counts))
