"""Protocols: every dataset has both, headline statistics match the papers, cells come with intervals."""

import numpy as np
import pytest
from scipy import stats

from evaluation.metaeval.protocols import PROTOCOLS, protocol, rating_cells


def test_every_dataset_has_a_paper_and_a_canonical_protocol():
    datasets = {p.dataset for p in PROTOCOLS.values()}
    assert datasets == {
        *("flickr8k-expert", "flickr8k-cf", "msvd-eval", "thumb", "pascal50s"),
        *("polaris", "nebula", "composite", "foil"),
    }
    for dataset in datasets:
        assert protocol(dataset, "paper").version and protocol(dataset, "canonical").version
    assert protocol("flickr8k-expert").statistics[0] == "tau_c"
    assert protocol("flickr8k-cf").statistics[0] == "tau_b"
    assert [protocol(name).statistics[0] for name in ("polaris", "nebula", "composite", "foil")] == [
        *("tau_c", "tau_c", "tau_c"),
        "accuracy",
    ]
    with pytest.raises(KeyError, match="no 'paper' protocol"):
        protocol("nope")


def test_rating_cells_equal_scipy_and_bracket_the_value():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 5, 900).astype(float)
    metric = human + rng.normal(0, 1.5, 900)
    metric[5] = np.nan  # a failed score is left out, not treated as 0
    images = np.repeat(np.arange(300), 3)
    chosen = protocol("flickr8k-expert", "canonical")
    cells = rating_cells(chosen, human, metric, images)
    keep = ~np.isnan(metric)
    assert cells["tau_b"].value == pytest.approx(stats.kendalltau(human[keep], metric[keep]).statistic)
    assert cells["pearson"].value == pytest.approx(stats.pearsonr(human[keep], metric[keep]).statistic)
    for cell in cells.values():
        assert cell.low < cell.value < cell.high and cell.replicates == chosen.replicates


def test_pascal_protocol_has_no_rating_cells():
    with pytest.raises(ValueError, match="no rating statistic"):
        rating_cells(protocol("pascal50s"), [1, 2], [1, 2], [0, 1])
