"""Cluster bootstrap: whole clusters are resampled, intervals contain the estimate, seeds repeat."""

import numpy as np
import pytest

from capbench_eval.metaeval import bootstrap
from capbench_eval.metaeval.bootstrap import (
    cluster_bootstrap,
    cluster_bootstrap_blocks,
    cluster_bootstrap_draws,
    cluster_draws,
    cluster_index,
    cluster_weights,
)
from capbench_eval.metaeval.kendall import kendall_tau_b


def test_rows_of_a_cluster_share_their_weight():
    clusters = ["a", "a", "a", "b", "c", "c"]
    weights, cluster_of_row = cluster_weights(clusters, replicates=50, seed=1)
    assert weights.shape == (50, 6)
    assert (weights[:, 0] == weights[:, 1]).all()
    assert (weights[:, 4] == weights[:, 5]).all()
    assert (weights[:, [0, 3, 4]].sum(axis=1) == 3).all()  # three clusters drawn per replicate


def test_interval_brackets_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(0)
    images = np.repeat(np.arange(200), 3)
    human = rng.integers(1, 5, 600).astype(float)
    metric = human + rng.normal(0, 2, 600)
    statistic = lambda w: (kendall_tau_b(human, metric, w),)  # noqa: E731
    first = cluster_bootstrap(statistic, images, replicates=300, seed=7)[0]
    again = cluster_bootstrap(statistic, images, replicates=300, seed=7)[0]
    assert first == again
    assert first.low < first.value < first.high
    assert first.value == pytest.approx(kendall_tau_b(human, metric))
    assert 0.02 < first.high - first.low < 0.3


@pytest.mark.parametrize("keep_bytes", [bootstrap.KEEP_BYTES, 0])
def test_draws_in_blocks_are_the_rows_of_one_multinomial_call(monkeypatch, keep_bytes):
    """The replicates are those drawn before blocks existed, whatever the block size, and whether
    or not the draws are kept."""
    monkeypatch.setattr(bootstrap, "KEEP_BYTES", keep_bytes)
    bootstrap.forget_draws()
    expected = np.random.default_rng(5).multinomial(40, np.full(40, 1 / 40), size=23)
    for block in (1, 4, 23, 100):
        blocks = list(cluster_draws(40, 23, 5, block=block))
        assert all(len(b) <= block and b.dtype == np.int64 for b in blocks)
        assert np.array_equal(np.concatenate(blocks), expected)
    clusters = np.repeat([f"image {i:02d}" for i in np.random.default_rng(6).permutation(40)], 2)
    weights, cluster_of_row = cluster_weights(clusters, 23, 5)
    assert np.array_equal(cluster_of_row, np.unique(clusters, return_inverse=True)[1])
    assert np.array_equal(weights, expected[:, cluster_of_row])
    bootstrap.forget_draws()


def test_block_statistics_give_the_per_replicate_intervals():
    rng = np.random.default_rng(2)
    images = np.repeat(np.arange(50), 3)
    values = rng.normal(size=150)
    per_row = lambda w: (np.average(values, weights=np.ones(150) if w is None else w),)  # noqa: E731
    cluster_of_row = cluster_index(images)
    per_block = lambda counts: (counts[:, cluster_of_row] @ values / counts[:, cluster_of_row].sum(axis=1))[:, None]  # noqa: E731
    one, one_draws = cluster_bootstrap_draws(per_row, images, replicates=40, seed=3)
    block, block_draws = cluster_bootstrap_blocks(per_block, cluster_of_row, replicates=40, seed=3)
    assert one_draws.shape == block_draws.shape == (40, 1)
    np.testing.assert_allclose(block_draws, one_draws, rtol=1e-12)
    assert block[0].replicates == one[0].replicates == 40
    assert (block[0].value, block[0].low, block[0].high) == pytest.approx((one[0].value, one[0].low, one[0].high))
