"""System-level agreement with item-resampled intervals."""

import numpy as np
import pytest

from capbench_eval.metaeval.bootstrap import cluster_weights
from capbench_eval.metaeval.correlation import pearson
from capbench_eval.metaeval.kendall import kendall_tau_b
from capbench_eval.metaeval.system_level import SYSTEM_STATISTICS, SystemLevel, system_level_intervals, system_means


def test_system_level_intervals_over_item_resamples():
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(40), 4)
    systems = np.tile(["a", "b", "c", "d"], 40)
    quality = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    human = np.array([quality[s] for s in systems]) + rng.normal(0, 0.3, len(items))
    metric = 10 * np.array([quality[s] for s in systems]) + rng.normal(0, 3, len(items))
    cells = system_level_intervals(human, metric, systems, items, replicates=200, seed=1)
    assert cells["tau_b"].value == 1.0
    assert cells["pairwise_agreement"].value == 1.0
    assert 0.95 < cells["pearson"].value <= 1.0
    assert cells["pearson"].low <= cells["pearson"].value
    reversed_cells = system_level_intervals(human, -metric, systems, items, replicates=50, seed=1)
    assert reversed_cells["tau_b"].value == -1.0
    assert reversed_cells["pairwise_agreement"].value == 0.0


def test_failed_rows_are_left_out_and_too_few_systems_are_refused():
    items = np.repeat(np.arange(10), 4)
    systems = np.tile(["a", "b", "c", "d"], 10)
    human = np.arange(40, dtype=float)
    metric = human.copy()
    metric[systems == "a"] = np.nan  # every caption of system a failed
    three = system_level_intervals(human, metric, systems, items, replicates=20, seed=1)
    assert three["tau_b"].value == 1.0
    with pytest.raises(ValueError, match="at least 3 systems, got 2"):
        system_level_intervals(human, metric, np.where(systems == "d", "c", systems), items, replicates=10, seed=1)


def _per_replicate(human, metric, systems, items, replicates, seed):
    """The statistics replicate by replicate on row weights, as before they were computed in blocks."""
    keep = ~np.isnan(metric)
    human, metric, systems, items = human[keep], metric[keep], systems[keep], items[keep]
    names, index = np.unique(systems, return_inverse=True)
    weights, _ = cluster_weights(items, replicates, seed)
    rows = []
    for w in weights:
        totals = np.bincount(index, weights=w, minlength=len(names))
        if (totals == 0).any():
            rows.append([np.nan] * 3)
            continue
        level = SystemLevel(
            list(names), np.bincount(index, weights=w * human) / totals, np.bincount(index, weights=w * metric) / totals
        )
        rows.append([level.correlation(pearson), level.correlation(kendall_tau_b), level.pairwise_agreement()])
    return np.array(rows)


def test_intervals_equal_the_statistics_of_each_replicate():
    """Ties between systems (two score alike on every item), failed rows, and a system on few items
    that some replicates lose entirely (NaN replicates, left out)."""
    rng = np.random.default_rng(3)
    items = np.repeat(np.arange(30), 4)
    systems = np.tile(["a", "b", "c", "d"], 30)
    human = rng.integers(1, 6, 120).astype(float)
    metric = human + rng.normal(0, 1, 120)
    metric[systems == "b"] = metric[systems == "a"]  # a and b tie in the metric in every replicate
    human[systems == "c"] = human[systems == "a"]  # a and c tie in the people's means
    metric[(systems == "d") & (items > 2)] = np.nan  # d has 3 items left
    cells = system_level_intervals(human, metric, systems, items, replicates=60, seed=4)
    expected = _per_replicate(human, metric, systems, items, 60, 4)
    lost = np.isnan(expected[:, 0])
    assert 0 < lost.sum() < 60
    for column, name in enumerate(SYSTEM_STATISTICS):
        kept = expected[:, column][~np.isnan(expected[:, column])]
        low, high = np.percentile(kept, [2.5, 97.5])
        assert cells[name].replicates == len(kept)
        assert (cells[name].low, cells[name].high) == pytest.approx((low, high), rel=1e-12)
    level = system_means(human[~np.isnan(metric)], metric[~np.isnan(metric)], systems[~np.isnan(metric)])
    assert cells["tau_b"].value == pytest.approx(level.correlation(kendall_tau_b), rel=1e-12)
    assert cells["pairwise_agreement"].value == level.pairwise_agreement()


def test_system_level_values_are_those_of_the_replicate_at_a_time_code():
    """What the previous implementation (da53b94) gave for these rows and seed."""
    rng = np.random.default_rng(20)
    human = rng.integers(1, 6, 240).astype(float)
    metric = np.round(human + rng.normal(0, 1.5, 240), 1)
    metric[[3, 50, 77]] = np.nan
    items, systems = np.repeat(np.arange(60), 4), np.tile(["a", "b", "c", "d"], 60)
    cells = system_level_intervals(human, metric, systems, items, replicates=30, seed=9)
    before = {
        "pearson": (0.9890977203050647, 0.456157343809105, 0.9958997729448922),
        "tau_b": (0.6666666666666666, 0.13236628473041526, 1.0),
        "pairwise_agreement": (0.8333333333333334, 0.5, 1.0),
    }
    for name, values in before.items():
        cell = cells[name]
        assert (cell.value, cell.low, cell.high) == pytest.approx(values, rel=1e-12, abs=0)
        assert cell.replicates == 30


def test_constant_means_give_nan_pearson():
    items = np.repeat(np.arange(20), 3)
    systems = np.tile(["a", "b", "c"], 20)
    human = np.tile([1.0, 2.0, 3.0], 20)
    cells = system_level_intervals(human, np.full(60, 0.3), systems, items, replicates=10, seed=1)
    assert np.isnan(cells["pearson"].value)
    assert cells["pearson"].replicates == 0
    assert np.isnan(cells["tau_b"].value)
    assert cells["pairwise_agreement"].value == 0.0
