"""Paired comparison of two systems: the difference's interval and p-value come from resampling
images once for both systems, and BLEU's corpus number can be resampled from its counts."""

import numpy as np
import pytest

from capbench_eval import metrics as registry
from capbench_eval.metaeval.bootstrap import cluster_weights
from capbench_eval.metaeval.paired import image_weights, mean_statistic, paired_difference
from capbench_eval.metrics import CaptionRow


def test_a_system_against_itself_differs_by_nothing():
    values = np.random.default_rng(0).random(50)
    found = paired_difference(mean_statistic(values), mean_statistic(values), image_weights(50, replicates=200))
    assert (found.value, found.low, found.high, found.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert found.images == 50
    assert found.replicates == 200


def test_pairing_finds_a_small_steady_gain_that_image_difficulty_would_hide():
    """Images vary a lot in difficulty and A beats B by a little on every one: paired, the
    difference is clear; the same numbers resampled independently for each system are not."""
    rng = np.random.default_rng(1)
    difficulty = rng.normal(0, 1.0, 200)
    b = difficulty + rng.normal(0, 0.05, 200)
    a = b + 0.05
    weights = image_weights(200, replicates=1000, seed=3)
    paired = paired_difference(mean_statistic(a), mean_statistic(b), weights)
    assert paired.value == pytest.approx(0.05)
    assert 0 < paired.low < 0.05 < paired.high
    assert paired.p_value < 0.01
    other, _ = cluster_weights(np.arange(200), 1000, 4)  # B drawn on other images than A
    independent = (weights @ a) / weights.sum(1) - (other @ b) / other.sum(1)
    assert np.percentile(independent, 2.5) < 0 < np.percentile(independent, 97.5)


def test_the_p_value_is_two_sided_and_the_interval_follows_the_sign():
    rng = np.random.default_rng(2)
    b = rng.random(80)
    worse = paired_difference(mean_statistic(b - 0.2), mean_statistic(b), image_weights(80, replicates=300))
    assert worse.value == pytest.approx(-0.2)
    assert worse.high < 0
    assert worse.p_value < 0.01
    better = paired_difference(mean_statistic(b), mean_statistic(b - 0.2), image_weights(80, replicates=300))
    assert better.value == pytest.approx(0.2)
    assert better.low > 0
    assert better.p_value == worse.p_value
    noise = rng.normal(0, 1, 80)
    unclear = paired_difference(mean_statistic(b + noise * 0.05), mean_statistic(b), image_weights(80, replicates=300))
    assert unclear.low < 0 < unclear.high
    assert unclear.p_value >= 0.05
    # The p-value counts the side opposite the observed difference: draws mostly on the other side
    # than the point estimate (possible for a corpus number) give a p near 2, capped at 1.
    flipped = paired_difference(
        lambda w: 0.1 if w is None else np.full(len(w), -0.1),
        lambda w: 0.0 if w is None else np.zeros(len(w)),
        image_weights(10, replicates=100),
    )
    assert flipped.value == pytest.approx(0.1)
    assert flipped.p_value == 1.0


def test_bleu_resampled_from_its_counts_equals_the_corpus_number_of_the_drawn_rows():
    rows = [
        CaptionRow("1", "a dog runs on the grass", ("a dog is running on grass", "the dog runs")),
        CaptionRow("2", "two men ride bikes", ("two people riding bicycles",)),
        CaptionRow("3", "a cat", ("a small cat sleeps on a sofa", "a cat on a couch")),
    ]
    metric = registry.get("bleu_2")
    result = metric.score(rows)
    scores = np.array(result.scores)
    assert metric.resampled(scores, result.statistics, None) == pytest.approx(result.corpus)
    weights = np.array([[2, 0, 1], [0, 3, 0]])
    drawn = metric.resampled(scores, result.statistics, weights)
    first = metric.aggregate([], [result.statistics[0]] * 2 + [result.statistics[2]])
    second = metric.aggregate([], [result.statistics[1]] * 3)
    assert drawn == pytest.approx([first, second])


def test_a_mean_metric_resamples_its_mean_and_a_corpus_metric_needs_its_statistics():
    scores = np.array([0.2, 0.4, 0.9])
    rouge = registry.get("rouge_l")
    assert rouge.resampled(scores, None, None) == pytest.approx(0.5)
    assert rouge.resampled(scores, None, np.array([[3, 0, 0], [0, 1, 2]])) == pytest.approx([0.2, (0.4 + 1.8) / 3])
    with pytest.raises(ValueError, match="statistics"):
        registry.get("meteor").resampled(scores, [], None)
    with pytest.raises(ValueError, match="statistics"):
        registry.get("bleu_4").resampled(scores, None, None)
