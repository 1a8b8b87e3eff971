"""A system's number, its interval and the paired difference of two: one definition (mean or corpus
statistic of summed statistics), images resampled, and the system level read from the same numbers."""

import numpy as np
import pytest

from capbench_eval.metaeval.bootstrap import cluster_bootstrap, cluster_weights
from capbench_eval.metaeval.correlation import pearson
from capbench_eval.metaeval.kendall import kendall_tau_b
from capbench_eval.metaeval.paired import image_weights
from capbench_eval.metaeval.system_level import JudgedRows, ScoredRows, system_level_cells
from capbench_eval.metaeval.system_value import (
    MEAN_OF_SCORES,
    image_totals,
    paired_system_difference,
    system_number,
    totals_statistic,
)
from capbench_eval.metrics import CaptionRow, get


def _bleu_rows(count: int, seed: int) -> list[CaptionRow]:
    draw = np.random.default_rng(seed)
    words = [
        "a",
        "the",
        "man",
        "dog",
        "cat",
        "runs",
        "sits",
        "on",
        "in",
        "grass",
        "water",
        "red",
        "ball",
        "two",
        "people",
    ]

    def sentence() -> str:
        return " ".join(draw.choice(words, size=int(draw.integers(3, 9))))

    return [CaptionRow(str(i), sentence(), tuple(sentence() for _ in range(3))) for i in range(count)]


def test_a_mean_metrics_number_is_the_mean_of_its_captions_and_its_interval_draws_images():
    values = np.array([0.1, 0.3, 0.5, 0.9, 0.2, 0.4])
    images = [7, 7, 3, 3, 5, 9]  # two images with two captions each
    summed = image_totals(MEAN_OF_SCORES, values, None, images)
    assert list(summed.images) == [3, 5, 7, 9]
    assert summed.captions == 6
    number = system_number(MEAN_OF_SCORES, summed, replicates=300, seed=4)
    assert number.value == pytest.approx(values.mean())
    assert (number.images, number.captions) == (4, 6)

    def mean(weights):  # the captions of a drawn image drawn with it
        return [float(np.average(values, weights=weights))] if weights is not None else [float(values.mean())]

    expected = cluster_bootstrap(mean, images, replicates=300, seed=4)[0]
    assert (number.low, number.high) == pytest.approx((expected.low, expected.high), rel=1e-12)


def test_corpus_bleu_is_formed_from_summed_counts_and_resampled_from_them():
    metric = get("bleu_4")
    rows = _bleu_rows(40, seed=1)
    result = metric.score(rows)
    images = [i // 2 for i in range(len(rows))]  # two captions per image
    summed = image_totals(metric, result.scores, result.statistics, images)
    number = system_number(metric, summed, replicates=200, seed=9)
    assert number.value == pytest.approx(result.corpus, rel=1e-12)
    assert number.value != pytest.approx(np.mean(result.scores))  # not the mean of sentence BLEU
    weights, _ = cluster_weights(images, 200, 9)  # the same replicates, row by row
    draws = [
        metric.aggregate([], [s for s, times in zip(result.statistics, w, strict=True) for _ in range(times)])
        for w in weights
    ]
    assert (number.low, number.high) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])), rel=1e-12)
    assert number.low < number.value < number.high


def test_one_image_has_no_interval_and_no_caption_has_no_number():
    summed = image_totals(MEAN_OF_SCORES, [0.4, 0.6], None, [1, 1])
    alone = system_number(MEAN_OF_SCORES, summed)
    assert (alone.value, alone.low, alone.high, alone.images, alone.captions) == (pytest.approx(0.5), None, None, 1, 2)
    empty = system_number(MEAN_OF_SCORES, image_totals(MEAN_OF_SCORES, [], None, []))
    assert (empty.value, empty.low, empty.high) == (None, None, None)
    with pytest.raises(ValueError):
        image_totals(get("bleu_1"), [0.2], [None], [1])  # a corpus metric without a caption's counts


def test_the_paired_difference_over_every_image_is_the_difference_of_the_two_numbers():
    metric = get("bleu_2")
    first, second = metric.score(_bleu_rows(30, 2)), metric.score(_bleu_rows(30, 3))
    images = list(range(30))
    a = image_totals(metric, first.scores, first.statistics, images)
    b = image_totals(metric, second.scores, second.statistics, images)
    weights = image_weights(30, replicates=300)
    found = paired_system_difference(metric, a, b, weights, images)
    assert found.value == pytest.approx(first.corpus - second.corpus, rel=1e-12)
    assert found.low < found.value < found.high
    shared = images[5:20]  # on fewer images: the same statistic over those images only
    fewer = paired_system_difference(metric, a, b, image_weights(len(shared), replicates=50), shared)
    chosen = slice(5, 20)
    expected = metric.aggregate([], first.statistics[chosen]) - metric.aggregate([], second.statistics[chosen])
    assert fewer.value == pytest.approx(expected, rel=1e-12)
    assert fewer.images == 15
    assert totals_statistic(metric, a.totals)(None) == pytest.approx(first.corpus, rel=1e-12)


def test_the_system_level_compares_people_with_each_systems_corpus_number():
    """Four systems on 20 images: people's mean per system against corpus BLEU of each system's
    captions (not the mean of sentence BLEU); lower-is-better metrics read negated (`sign`)."""
    metric = get("bleu_4")
    captions, systems, items, results = [], [], [], {}
    for system in range(4):
        rows = _bleu_rows(20, 10 + system)
        results[system] = metric.score(rows)
        captions += list(zip(results[system].scores, results[system].statistics, strict=True))
        systems += [system] * 20
        items += list(range(20))
    totals = metric.caption_totals(np.array([c[0] for c in captions]), [c[1] for c in captions])
    scored = ScoredRows(totals, np.array(systems), np.array(items))
    human = np.array([float(s) + 0.1 * (i % 3) for s, i in zip(systems, items, strict=True)])
    judged = JudgedRows(human, np.array(systems), np.array(items))
    cells = system_level_cells(judged, scored, metric, replicates=50, seed=1)
    corpus = np.array([results[s].corpus for s in range(4)])
    means = np.array([human[np.array(systems) == s].mean() for s in range(4)])
    assert cells["pearson"].value == pytest.approx(pearson(means, corpus), rel=1e-9)
    assert cells["tau_b"].value == pytest.approx(kendall_tau_b(means, corpus))
    flipped = system_level_cells(judged, scored, metric, sign=-1.0, replicates=50, seed=1)
    assert flipped["pearson"].value == pytest.approx(-cells["pearson"].value, rel=1e-9)
    assert cells["pearson"].replicates == 50
    assert cells["pearson"].low <= cells["pearson"].value


def test_equal_system_numbers_are_a_tie_whatever_order_their_sums_ran_in():
    items, systems = np.tile(np.arange(25), 3), np.repeat(["a", "b", "c"], 25)
    values = np.tile(np.linspace(0.1, 0.9, 25), 3)  # three systems, the same scores
    scored = ScoredRows(MEAN_OF_SCORES.caption_totals(values, None), systems, items)
    judged = JudgedRows(np.repeat([1.0, 2.0, 3.0], 25), systems, items)
    cells = system_level_cells(judged, scored, MEAN_OF_SCORES, replicates=20, seed=2)
    assert np.isnan(cells["pearson"].value)
    assert np.isnan(cells["tau_b"].value)
