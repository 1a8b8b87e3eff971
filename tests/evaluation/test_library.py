"""capbench_eval.score and capbench_eval.correlate: the system's number formed as the metric defines
it (a corpus statistic or the mean), its interval over images, the signature, and input errors
that name the caption; correlations equal scipy's with the protocol's statistics."""

import math

import numpy as np
import pytest
from scipy import stats

import capbench_eval
from capbench_eval import correlate, score
from capbench_eval.metrics import get

CANDIDATES = {
    "a": "a dog runs across the grass",
    "b": "a man rides a red bike down the road",
    "c": "two children play in the snow",
    "d": "a woman holds an umbrella in the rain",
}
REFERENCES = {
    "a": ["a dog is running on the grass", "a brown dog runs through a field"],
    "b": ["a man is riding a bike on a road", "a cyclist rides down the street"],
    "c": ["two kids are playing in the snow", "children play outside in winter"],
    "d": ["a woman with an umbrella walks in the rain", "a lady stands under an umbrella"],
}


def test_a_corpus_metric_gives_its_corpus_statistic_and_a_mean_metric_the_mean():
    bleu = score("bleu_2", CANDIDATES, REFERENCES)
    rows = [capbench_eval.metrics.CaptionRow(k, CANDIDATES[k], tuple(REFERENCES[k])) for k in CANDIDATES]
    assert bleu.value == pytest.approx(get("bleu_2").score(rows).corpus, abs=1e-12)
    assert bleu.value != pytest.approx(float(np.mean(bleu.scores)))  # corpus BLEU is not the mean
    rouge = score("rouge_l", CANDIDATES, REFERENCES)
    assert rouge.value == pytest.approx(float(np.mean(rouge.scores)), abs=1e-12)
    assert rouge.low <= rouge.value <= rouge.high
    assert rouge.images == 4
    assert rouge.ids == list(CANDIDATES)
    assert rouge.points == 100.0
    assert rouge.shown() == f"{rouge.value * 100:.2f} [{rouge.low * 100:.2f}, {rouge.high * 100:.2f}]"
    assert str(rouge).startswith("ROUGE-L ")
    assert rouge.signature.startswith("rouge_l|v:1|")


def test_lists_in_order_give_what_mappings_give():
    by_id = score("cider_d", CANDIDATES, REFERENCES)
    in_order = score("cider_d", list(CANDIDATES.values()), list(REFERENCES.values()))
    assert in_order.scores == by_id.scores
    assert (in_order.value, in_order.low, in_order.high) == (by_id.value, by_id.low, by_id.high)


def test_captions_of_one_image_are_drawn_together():
    alone = score("rouge_l", CANDIDATES, REFERENCES)
    paired = score("rouge_l", CANDIDATES, REFERENCES, images={"a": 1, "b": 1, "c": 2, "d": 2})
    assert paired.value == alone.value
    assert paired.images == 2
    assert (paired.low, paired.high) != (alone.low, alone.high)


def test_one_image_has_a_number_and_no_interval():
    one = score("rouge_l", {"a": CANDIDATES["a"]}, {"a": REFERENCES["a"]})
    assert one.value is not None
    assert one.low is None
    assert one.high is None
    assert one.shown() == f"{one.value * 100:.2f}"


@pytest.mark.parametrize(
    "candidates, references, message",
    [
        ({"a": "a dog"}, {"b": ["a dog"]}, "references: none for caption 'a'"),
        ({"a": "a dog"}, {"a": "a dog runs"}, "references of caption 'a': a list of captions"),
        ({"a": 3}, {"a": ["a dog"]}, "candidates: caption 'a' is not a string"),
        ("a dog", [["a dog"]], "not one string"),
        ({}, {}, "no caption to score"),
        (["a dog", "a cat"], [["a dog"]], "references: one per caption (2)"),
        ({"a": "a dog"}, None, "BLEU-4 compares with references"),
    ],
)
def test_bad_input_names_the_caption(candidates, references, message):
    with pytest.raises(ValueError) as raised:
        score("bleu_4", candidates, references)
    assert message in str(raised.value)


def test_a_metric_that_cannot_run_here_says_why():
    with pytest.raises(capbench_eval.metrics.MetricUnavailable) as raised:
        score("bertscore", CANDIDATES, REFERENCES)
    assert str(raised.value) == get("bertscore").unavailable_reason()


def test_correlations_equal_scipys_and_the_paper_protocol_orders_its_statistics():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 5, 60).astype(float)
    metric = human + rng.normal(0, 1.5, 60)
    found = correlate(metric.tolist(), human.tolist())
    assert found["tau_b"].value == pytest.approx(stats.kendalltau(human, metric).statistic, abs=1e-12)
    assert found["tau_c"].value == pytest.approx(stats.kendalltau(human, metric, variant="c").statistic, abs=1e-12)
    assert found["pearson"].value == pytest.approx(stats.pearsonr(human, metric).statistic, abs=1e-12)
    assert found["spearman"].value == pytest.approx(stats.spearmanr(human, metric).statistic, abs=1e-12)
    for cell in found.statistics.values():
        assert cell.low <= cell.value <= cell.high
    assert found.rows == 60
    paper = correlate(metric.tolist(), human.tolist(), protocol="flickr8k-expert/paper")
    assert list(paper.statistics) == ["tau_c", "tau_b"]
    assert paper["tau_c"].value == found["tau_c"].value
    assert str(paper).startswith("flickr8k-expert/paper@1: tau_c ")


def test_a_nan_row_is_left_out_and_bad_lengths_are_refused():
    found = correlate([0.1, math.nan, 0.3, 0.5], [1, 2, 2, 3])
    assert found.rows == 3
    with pytest.raises(ValueError, match="3 scores and 2 judgments"):
        correlate([0.1, 0.2, 0.3], [1, 2])
    with pytest.raises(ValueError, match="no 'paper' protocol for dataset 'nowhere'"):
        correlate([0.1, 0.2, 0.3], [1, 2, 3], protocol="nowhere/paper")
