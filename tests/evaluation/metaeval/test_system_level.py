"""System-level agreement with item-resampled intervals."""

import numpy as np
import pytest

from evaluation.metaeval.system_level import system_level_intervals


def test_system_level_intervals_over_item_resamples():
    rng = np.random.default_rng(0)
    items = np.repeat(np.arange(40), 4)
    systems = np.tile(["a", "b", "c", "d"], 40)
    quality = {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    human = np.array([quality[s] for s in systems]) + rng.normal(0, 0.3, len(items))
    metric = 10 * np.array([quality[s] for s in systems]) + rng.normal(0, 3, len(items))
    cells = system_level_intervals(human, metric, systems, items, replicates=200, seed=1)
    assert cells["tau_b"].value == 1.0 and cells["pairwise_agreement"].value == 1.0
    assert 0.95 < cells["pearson"].value <= 1.0 and cells["pearson"].low <= cells["pearson"].value
    reversed_cells = system_level_intervals(human, -metric, systems, items, replicates=50, seed=1)
    assert reversed_cells["tau_b"].value == -1.0 and reversed_cells["pairwise_agreement"].value == 0.0


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
