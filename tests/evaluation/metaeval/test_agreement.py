"""Krippendorff's α of rating campaigns: the `krippendorff` package as oracle at every level of
measurement, Krippendorff's own worked example, the undefined cases, and the unit bootstrap."""

import math

import krippendorff
import numpy as np
import pytest

from capbench_eval.metaeval.agreement import LEVELS, krippendorff_alpha, krippendorff_alpha_interval
from capbench_eval.metaeval.bootstrap import Interval, cluster_weights

nan = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers, 12 units.
EXAMPLE = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)


def triples(data: np.ndarray) -> list[tuple[int, str, float]]:
    """(unit, annotator, value) for every present value of an (annotators × units) matrix."""
    return [(unit, f"coder{c}", float(data[c, unit])) for c, unit in zip(*np.nonzero(~np.isnan(data)), strict=True)]


def test_krippendorffs_worked_example():
    ratings = triples(EXAMPLE)
    assert krippendorff_alpha(ratings, "nominal") == pytest.approx(0.743, abs=5e-4)  # as printed in the paper
    for level in LEVELS:
        expected = krippendorff.alpha(reliability_data=EXAMPLE, level_of_measurement=level)
        assert krippendorff_alpha(ratings, level) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_krippendorff_package_with_missing_values(level, seed):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 6, 60)
    data = np.clip(truth + rng.integers(-2, 3, (5, 60)), 0, 7).astype(float)
    if level in ("interval", "ratio") and seed == 2:
        data += rng.random(data.shape).round(2)  # non-integer values
    data[rng.random(data.shape) < 0.35] = nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(triples(data), level) == pytest.approx(expected, abs=1e-12)


def test_nominal_values_may_be_any_labels():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 3, (3, 40)).astype(float)
    data[rng.random(data.shape) < 0.2] = nan
    labels = ["good", "fair", "poor"]
    named = [(unit, coder, labels[int(value)]) for unit, coder, value in triples(data)]
    assert krippendorff_alpha(named, "nominal") == pytest.approx(krippendorff_alpha(triples(data), "nominal"))


def test_ordinal_needs_only_the_order_of_values():
    rng = np.random.default_rng(4)
    data = rng.integers(1, 6, (3, 40)).astype(float)
    squashed = [(u, c, v**3 + 10) for u, c, v in triples(data)]  # a monotone relabelling
    assert krippendorff_alpha(squashed, "ordinal") == pytest.approx(krippendorff_alpha(triples(data), "ordinal"))
    assert krippendorff_alpha(squashed, "interval") != pytest.approx(krippendorff_alpha(triples(data), "interval"))


@pytest.mark.parametrize("level", LEVELS)
def test_perfect_agreement_is_one(level):
    ratings = [(unit, coder, value) for unit, value in enumerate([1, 2, 3, 5, 2, 4]) for coder in "abc"]
    ratings.append((6, "a", 1))  # a unit with one value: not pairable
    assert krippendorff_alpha(ratings, level) == 1.0


@pytest.mark.parametrize("level", LEVELS)
def test_undefined_alpha_is_nan(level):
    assert math.isnan(krippendorff_alpha([], level))
    assert math.isnan(krippendorff_alpha([(u, "a", u) for u in range(5)], level))  # one value per unit
    assert math.isnan(krippendorff_alpha([(u, c, 3) for u in range(5) for c in "ab"], level))  # no variation
    interval = krippendorff_alpha_interval([(u, "a", u) for u in range(5)], level, replicates=10)
    assert math.isnan(interval.value)
    assert interval.replicates == 0


def test_units_with_one_value_and_missing_values_change_nothing():
    ratings = triples(EXAMPLE)
    more = [*ratings, ("lonely", "coder0", 4.0), ("lonely", "coder1", None), ("other", "coder2", nan)]
    for level in LEVELS:
        assert krippendorff_alpha(more, level) == krippendorff_alpha(ratings, level)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="twice"):
        krippendorff_alpha([(1, "a", 1), (1, "a", 2), (1, "b", 2)])
    with pytest.raises(ValueError, match="≥ 0"):
        krippendorff_alpha([(1, "a", -1), (1, "b", 2)], "ratio")
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([(1, "a", 1), (1, "b", 2)], "cardinal")  # type: ignore[arg-type]


@pytest.mark.parametrize("level", LEVELS)
def test_the_unit_bootstrap_brackets_alpha_and_is_reproducible(level):
    rng = np.random.default_rng(5)
    truth = rng.integers(1, 6, 300)
    data = np.clip(truth + rng.integers(-1, 2, (3, 300)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.1] = nan
    ratings = triples(data)
    first = krippendorff_alpha_interval(ratings, level, replicates=300, seed=7)
    assert first == krippendorff_alpha_interval(ratings, level, replicates=300, seed=7)
    assert first != krippendorff_alpha_interval(ratings, level, replicates=300, seed=8)
    shuffled = [ratings[i] for i in rng.permutation(len(ratings))]  # the order of the ratings does not matter
    again = krippendorff_alpha_interval(shuffled, level, replicates=300, seed=7)
    assert (again.value, again.low, again.high) == pytest.approx((first.value, first.low, first.high), abs=1e-12)
    assert isinstance(first, Interval) and first.replicates == 300 and first.level == 0.95
    assert first.value == krippendorff_alpha(ratings, level)
    assert first.low < first.value < first.high
    assert 0.02 < first.high - first.low < 0.3
    assert all(type(v) is float for v in (first.value, first.low, first.high))


@pytest.mark.parametrize("level", LEVELS)
def test_a_replicate_is_alpha_of_the_units_drawn(level):
    """Each replicate equals α recomputed on the drawn units (a unit drawn twice appears twice)."""
    rng = np.random.default_rng(6)
    data = rng.integers(0, 5, (3, 30)).astype(float)
    data[rng.random(data.shape) < 0.2] = nan
    data[:, 0] = [1, nan, nan]  # not pairable: not resampled
    pairable = [u for u in range(30) if (~np.isnan(data[:, u])).sum() >= 2]
    draws, _ = cluster_weights(np.arange(len(pairable)), 40, 11)
    alphas = []
    for draw in draws:
        units = np.repeat(pairable, draw)
        alphas.append(krippendorff.alpha(reliability_data=data[:, units], level_of_measurement=level))
    low, high = np.nanpercentile(alphas, [2.5, 97.5])
    found = krippendorff_alpha_interval(triples(data), level, replicates=40, seed=11)
    assert (found.low, found.high) == pytest.approx((low, high), abs=1e-10)
    assert found.replicates == int(np.isfinite(alphas).sum())


def test_confidence_and_no_replicates():
    ratings = triples(EXAMPLE)
    wide = krippendorff_alpha_interval(ratings, "nominal", replicates=400, confidence=0.99)
    narrow = krippendorff_alpha_interval(ratings, "nominal", replicates=400, confidence=0.5)
    assert wide.level == 0.99
    assert wide.low < narrow.low < narrow.high < wide.high
    none = krippendorff_alpha_interval(ratings, "nominal", replicates=0)
    assert none.value == krippendorff_alpha(ratings, "nominal")
    assert math.isnan(none.low)
    assert none.replicates == 0
