"""The one table of published values: every value names its source, matches to its printed
rounding, and the board shows it only beside a cell of the same rows and data version."""

import pytest

from capbench_eval.metaeval.published import PUBLISHED, SOURCES, Published, published_of, published_value


def test_every_value_names_a_known_source_and_its_rounding():
    assert PUBLISHED and all(entry.source in SOURCES for entry in PUBLISHED)
    keys = [(e.dataset, e.metric, e.dimension, e.statistic, e.split) for e in PUBLISHED]
    assert len(keys) == len(set(keys))  # one value per cell
    assert Published("x", "m", "", "tau_b", 22.3, "pac-s").tolerance == pytest.approx(0.05)
    assert Published("x", "m", "", "tau_b", 22.269, "pac-s", decimals=3).tolerance == pytest.approx(0.0005)


def test_the_flickr8k_cf_meteor_tau_b_is_the_sources_22_3():
    [entry] = [e for e in published_of("flickr8k-cf") if e.metric == "meteor" and e.statistic == "tau_b"]
    assert entry.value == 22.3
    assert abs(22.269 - entry.value) <= entry.tolerance  # the README's 3 decimals


def test_a_value_is_shown_only_beside_the_same_rows_and_data_version():
    assert published_value("flickr8k-expert", "cider_d", "expert", "tau_c", 16992) == 43.9
    assert published_value("flickr8k-expert", "cider_d", "expert", "tau_c", 500) is None  # a demo slice
    # Nebula's table is of the corrected scores: not beside the first release's cells.
    assert published_value("nebula", "cider_d", "overall", "tau_c", 3298, version="nebula-1-corrected") == 48.8
    assert published_value("nebula", "cider_d", "overall", "tau_c", 3298, version="nebula-1") is None
    assert published_value("polaris", "cider_d", "overall", "tau_c", 26122) == 52.1
    assert published_value("polaris", "cider_d", "overall", "tau_c", 400) is None
    assert published_value("composite", "meteor", "correctness", "tau_c", 11985) == 38.9
    assert published_value("composite", "meteor", "thoroughness", "tau_c", 11985) is None
