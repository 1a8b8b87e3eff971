"""Blocks of weightings at once (RankedRows) against a brute-force pair count and scipy on copied
rows: few and many levels on either side, ties, zero weights, cluster columns, every code path."""

import math
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

from capbench_eval.metaeval import ranked
from capbench_eval.metaeval.correlation import pearson_values, spearman_values
from capbench_eval.metaeval.kendall import PairCounts, pair_count_block, tau_b_values, tau_c_values
from capbench_eval.metaeval.ranked import RankedRows


def _brute_counts(human: np.ndarray, metric: np.ndarray, weights: np.ndarray) -> PairCounts:
    """Every pair of distinct rows classified one by one, counted w_i·w_j times (the pairs of a row's
    copies among themselves are not counted: as before, and they would only be ties in both)."""
    concordant = discordant = tied_human = tied_metric = tied_both = 0.0
    for i, j in combinations(range(len(human)), 2):
        product = weights[i] * weights[j]
        dh, dm = np.sign(human[i] - human[j]), np.sign(metric[i] - metric[j])
        if dh == 0 and dm == 0:
            tied_both += product
        elif dh == 0:
            tied_human += product
        elif dm == 0:
            tied_metric += product
        elif dh == dm:
            concordant += product
        else:
            discordant += product
    drawn = weights > 0
    rows = float(weights.sum())
    return PairCounts(
        concordant,
        discordant,
        tied_human,
        tied_metric,
        tied_both,
        rows,
        concordant + discordant + tied_human + tied_metric + tied_both,
        len(set(human[drawn].tolist())),
        len(set(metric[drawn].tolist())),
    )


def _each(block) -> list[PairCounts]:
    return [block[r] for r in range(len(block.rows))]


def _rows(seed: int, n: int, human_levels: int | None, metric_digits: int | None):
    """Human: integers 1..levels (None: continuous); metric around it, rounded to `metric_digits`
    (None: continuous; 0 gives many ties)."""
    rng = np.random.default_rng(seed)
    human = rng.normal(size=n) if human_levels is None else rng.integers(1, human_levels + 1, n).astype(float)
    metric = human / (human_levels or 1) + rng.normal(0, 0.5, n)
    if metric_digits is not None:
        metric = np.round(metric, metric_digits)
    return human, metric


CASES = [
    # seed, rows, human levels, metric digits
    (0, 60, 5, None),  # a rating scale, continuous metric: y = human, 3 bit levels
    (1, 60, 4, 0),  # ties on both sides, few metric values
    (2, 50, None, 1),  # continuous human, tied metric: y = metric
    (3, 45, None, None),  # both continuous: O(n log n) bit levels
    (4, 40, 2, None),  # one bit
    (5, 40, 8, 1),  # 8 levels: exactly 3 bits
    (6, 40, 9, 1),  # 9 levels: a fourth bit with one value above
    (7, 30, 1, None),  # human constant: no bits, τ NaN
]


@pytest.mark.parametrize("seed, n, human_levels, metric_digits", CASES)
def test_block_counts_equal_brute_force_per_weighting(seed, n, human_levels, metric_digits):
    human, metric = _rows(seed, n, human_levels, metric_digits)
    rng = np.random.default_rng(100 + seed)
    weights = rng.integers(0, 4, (5, n))
    weights[0] = 1
    weights[1, : n // 2] = 0  # zero weights: rows left out of that weighting
    block = pair_count_block(RankedRows(human, metric).weigh(weights))
    for r in range(len(weights)):
        assert block[r] == _brute_counts(human, metric, weights[r])


@pytest.mark.parametrize("seed, n, human_levels, metric_digits", CASES)
def test_block_statistics_equal_scipy_on_copies(seed, n, human_levels, metric_digits):
    human, metric = _rows(seed, n, human_levels, metric_digits)
    clusters = np.arange(n) // 3  # weights given per cluster of three rows
    counts = np.random.default_rng(200 + seed).integers(0, 3, (4, clusters.max() + 1))
    weighed = RankedRows(human, metric, clusters).weigh(counts, values=True, ranks=True)
    pairs = pair_count_block(weighed)
    values = {
        "tau_b": tau_b_values(pairs),
        "tau_c": tau_c_values(pairs),
        "pearson": pearson_values(weighed),
        "spearman": spearman_values(weighed),
    }
    for r, row in enumerate(counts):
        copies = np.repeat(np.arange(n), row[clusters])
        h, m = human[copies], metric[copies]
        constant = len(set(h.tolist())) < 2 or len(set(m.tolist())) < 2
        expected = {
            "tau_b": stats.kendalltau(h, m).statistic,
            "tau_c": stats.kendalltau(h, m, variant="c").statistic,
            "pearson": math.nan if constant else stats.pearsonr(h, m).statistic,
            "spearman": math.nan if constant else stats.spearmanr(h, m).statistic,
        }
        for name, value in expected.items():
            assert values[name][r] == pytest.approx(value, abs=1e-12, nan_ok=True), (name, r)


def test_metric_with_fewer_values_than_human_swaps_the_roles():
    human, metric = _rows(8, 80, None, 0)  # continuous human, a handful of metric values
    rows = RankedRows(human, metric)
    assert not rows.y_is_first
    weights = np.random.default_rng(9).integers(0, 3, (3, 80))
    block = pair_count_block(rows.weigh(weights))
    for r in range(3):
        assert block[r] == _brute_counts(human, metric, weights[r])


def test_matrix_and_sorted_paths_of_the_few_values_agree(monkeypatch):
    human, metric = _rows(10, 300, 6, 1)
    weights = np.random.default_rng(11).integers(0, 4, (6, 300))
    by_matrix = RankedRows(human, metric).weigh(weights, values=True, ranks=True)
    monkeypatch.setattr(ranked, "MATRIX_CELLS_PER_ROW", 0)
    rows = RankedRows(human, metric)
    assert rows.y_matrix is None
    by_order = rows.weigh(weights, values=True, ranks=True)
    assert _each(pair_count_block(by_order)) == _each(pair_count_block(by_matrix))
    assert np.array_equal(spearman_values(by_order), spearman_values(by_matrix))


def test_float_weights_and_large_totals_give_the_integer_results(monkeypatch):
    human, metric = _rows(12, 200, 5, 1)
    weights = np.random.default_rng(13).integers(0, 4, (4, 200))
    rows = RankedRows(human, metric)
    exact = rows.weigh(weights, values=True, ranks=True)
    as_float = rows.weigh(weights.astype(float), values=True, ranks=True)
    monkeypatch.setattr(ranked, "EXACT_ROWS", 1)  # totals too large for int64 rank sums: float64
    large = rows.weigh(weights, values=True, ranks=True)
    for other in (as_float, large):
        assert other.discordant.dtype == np.float64
        assert _each(pair_count_block(other)) == _each(pair_count_block(exact))
        np.testing.assert_allclose(spearman_values(other), spearman_values(exact), rtol=1e-12)
        np.testing.assert_allclose(pearson_values(other), pearson_values(exact), rtol=1e-12)


def test_reused_working_arrays_do_not_leak_between_blocks():
    human, metric = _rows(14, 150, 5, None)
    rows = RankedRows(human, metric, np.arange(150) // 5)
    counts = np.random.default_rng(15).integers(0, 3, (7, 30))
    whole = pair_count_block(rows.weigh(counts, ranks=True))
    one_by_one = [pair_count_block(rows.weigh(counts[r : r + 1], ranks=True))[0] for r in range(7)]
    assert [whole[r] for r in range(7)] == one_by_one


def test_weights_are_checked():
    rows = RankedRows(np.arange(4.0), np.arange(4.0), np.array([0, 0, 1, 1]))
    with pytest.raises(ValueError, match="k × 2"):
        rows.weigh(np.ones((1, 4), dtype=int))
    with pytest.raises(ValueError, match="non-negative"):
        rows.weigh(np.array([[1, -1]]))
    with pytest.raises(ValueError, match="values=True"):
        pearson_values(rows.weigh(np.ones((1, 2), dtype=int)))
    with pytest.raises(ValueError, match="ranks=True"):
        spearman_values(rows.weigh(np.ones((1, 2), dtype=int)))
