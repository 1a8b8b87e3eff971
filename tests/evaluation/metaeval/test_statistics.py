"""Pearson/Spearman (weighted = copies), pairwise accuracy, permutation test, clusters."""

import numpy as np
import pytest
from scipy import stats

from capbench_eval.metaeval.correlation import pearson, spearman
from capbench_eval.metaeval.kendall import kendall_tau_b
from capbench_eval.metaeval.pairwise import accuracy_by_category, pairwise_accuracy
from capbench_eval.metaeval.significance import permutation_p_value, significance_clusters


def _data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 5, n).astype(float)
    return human, np.round(human + rng.normal(0, 1.2, n), 1), rng.integers(0, 4, n)


def test_pearson_and_spearman_match_scipy_and_weights_match_copies():
    human, metric, weights = _data()
    assert pearson(human, metric) == pytest.approx(stats.pearsonr(human, metric).statistic, abs=1e-12)
    assert spearman(human, metric) == pytest.approx(stats.spearmanr(human, metric).statistic, abs=1e-12)
    copies = np.repeat(np.arange(len(human)), weights)
    assert pearson(human, metric, weights) == pytest.approx(
        stats.pearsonr(human[copies], metric[copies]).statistic, abs=1e-12
    )
    assert spearman(human, metric, weights) == pytest.approx(
        stats.spearmanr(human[copies], metric[copies]).statistic, abs=1e-12
    )


def test_constant_input_is_nan():
    assert np.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_pairwise_accuracy_strict_and_ties_half():
    result = pairwise_accuracy([0.9, 0.2, 0.5, 0.4], [0.1, 0.3, 0.5, 0.6], ["a", "a", "b", "b"])
    assert (result.strict, result.ties_half, result.ties, result.pairs) == (0.5, 0.625, 1, 4)
    with pytest.raises(ValueError, match="winner"):
        pairwise_accuracy([1], [2], ["tie"])


def test_accuracy_by_category_mean_is_unweighted():
    result = accuracy_by_category([1, 1, 1, 0], [0, 0, 0, 1], ["a", "a", "a", "a"], ["HC", "HC", "HC", "MM"])
    assert result["HC"].strict == 1.0
    assert result["MM"].strict == 0.0
    assert result["mean"].strict == 0.5


def test_permutation_test_separates_a_good_from_a_noisy_metric():
    rng = np.random.default_rng(1)
    human = rng.integers(1, 5, 600).astype(float)
    good, noisy = human + rng.normal(0, 0.8, 600), human + rng.normal(0, 3.0, 600)
    tau = lambda h, m: kendall_tau_b(h, m)  # noqa: E731
    assert permutation_p_value(human, good, noisy, tau, draws=200) < 0.01
    assert permutation_p_value(human, noisy, good, tau, draws=200) > 0.9
    same = permutation_p_value(human, good, good + rng.normal(0, 1e-6, 600), tau, draws=200)
    assert same > 0.05
    images = np.repeat(np.arange(200), 3)
    assert permutation_p_value(human, good, noisy, tau, clusters=images, draws=200) < 0.01


def test_cluster_swaps_move_all_rows_of_a_cluster():
    seen = []

    def record(h, m):
        seen.append(m.copy())
        return 0.0

    first = np.arange(6.0)
    z = (first - first.mean()) / first.std()  # what the test compares after z-scoring; -z for metric 2
    permutation_p_value(np.arange(6.0), first, -first, record, clusters=[0, 0, 0, 1, 1, 2], draws=30)
    origins = [np.sign(vector / z) for vector in seen]  # +1: row from metric 1, -1: from metric 2
    assert all(len(set(o[[0, 1, 2]])) == 1 and len(set(o[[3, 4]])) == 1 for o in origins)
    assert any(o[0] != o[3] for o in origins)  # clusters do swap independently


def test_significance_clusters_follow_assign_ranks():
    p = np.full((4, 4), 1.0)
    p[0, 2] = 0.01  # metric 0 beats metric 2: 2 opens cluster 2
    p[2, 3] = 0.2
    p[1, 3] = 0.5
    assert significance_clusters([0.5, 0.45, 0.4, 0.39], p) == [1, 1, 2, 2]
    with pytest.raises(ValueError, match="sorted"):
        significance_clusters([0.1, 0.5], p)


def test_paired_draws_give_one_sided_p_values_and_clusters():
    import numpy as np

    from capbench_eval.metaeval.significance import paired_draws_p_values, significance_clusters

    rng = np.random.default_rng(0)
    shared = rng.normal(0, 0.02, 1000)  # paired draws move together
    best, second, close = 0.5 + shared, 0.3 + shared, 0.3 + shared + rng.normal(-0.001, 0.01, 1000)
    p = paired_draws_p_values([best, second, close])
    assert p[0, 1] == 0.0
    assert p[0, 2] == 0.0
    assert 0.2 < p[1, 2] < 0.8
    assert np.isnan(p[1, 0])
    assert np.isnan(p[0, 0])
    assert significance_clusters([0.5, 0.3, 0.299], p) == [1, 2, 2]
