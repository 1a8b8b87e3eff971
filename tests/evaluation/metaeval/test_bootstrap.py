"""Cluster bootstrap: whole clusters are resampled, intervals contain the estimate, seeds repeat."""

import numpy as np
import pytest

from evaluation.metaeval.bootstrap import cluster_bootstrap, cluster_weights
from evaluation.metaeval.kendall import kendall_tau_b


def test_rows_of_a_cluster_share_their_weight():
    clusters = ["a", "a", "a", "b", "c", "c"]
    weights, cluster_of_row = cluster_weights(clusters, replicates=50, seed=1)
    assert weights.shape == (50, 6)
    assert (weights[:, 0] == weights[:, 1]).all() and (weights[:, 4] == weights[:, 5]).all()
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
