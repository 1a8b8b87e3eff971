"""A corpus scored in batches (the pipeline's way) gives the numbers of one call on the whole corpus:
CIDEr-D through its corpus context, corpus BLEU and METEOR through their per-row statistics."""

import math
import pickle

import pytest

from capbench_eval.metrics import CaptionRow, get

REFERENCES = [
    ("a dog runs on the grass", "a brown dog running outside", "the dog plays in a field"),
    ("two children sit on a bench", "kids sitting on a park bench", "two young boys rest on a bench"),
    ("a man rides a bike down a hill", "a cyclist on a steep road", "a person biking downhill"),
    ("a woman holds an umbrella in the rain", "a lady walks with an umbrella", "rain falls on a woman"),
]
CANDIDATES = [
    "a dog in a field",
    "a dog running",
    "two kids on a bench",
    "a boy sits",
    "a man on a bike",
    "a person riding downhill fast",
    "a woman with an umbrella",
    "rain",
]


def corpus() -> list[CaptionRow]:
    return [CaptionRow(str(i), text, REFERENCES[i // 2]) for i, text in enumerate(CANDIDATES)]


def batches(rows: list[CaptionRow], size: int) -> list[list[CaptionRow]]:
    return [rows[start : start + size] for start in range(0, len(rows), size)]


def test_cider_batches_with_the_corpus_context_equal_the_whole_corpus():
    metric, rows = get("cider_d"), corpus()
    whole = metric.score(rows).scores
    context = pickle.loads(pickle.dumps(metric.corpus_context(rows)))  # as a worker would receive it
    batched = [value for batch in batches(rows, 3) for value in metric.score(batch, context).scores]
    assert batched == pytest.approx(whole, abs=1e-12)
    # Without the context a batch is its own corpus, and its numbers differ.
    assert metric.score(rows[:3]).scores != pytest.approx(whole[:3], abs=1e-6)


@pytest.mark.parametrize("slug", ["bleu_1", "bleu_4", "meteor"])
def test_corpus_number_from_batch_statistics_equals_one_call(slug, request):
    if slug == "meteor":  # its JVMs on each batch's cut of the paraphrase table, not the whole (10 s each)
        request.getfixturevalue("meteor_index")
    metric, rows = get(slug), corpus()
    whole = metric.score(rows)
    scores, statistics = [], []
    for batch in batches(rows, 3):
        result = metric.score(batch)
        scores += result.scores
        statistics += result.statistics
    assert scores == pytest.approx(whole.scores, abs=1e-12)
    assert metric.aggregate(scores, statistics) == pytest.approx(whole.corpus, abs=1e-9)
    # The mean of per-caption scores is not the corpus number for these metrics.
    assert sum(scores) / len(scores) != pytest.approx(whole.corpus, abs=1e-6)


def test_default_aggregate_is_the_mean_without_failures():
    metric = get("rouge_l")
    assert metric.aggregate([0.2, math.nan, 0.4]) == pytest.approx(0.3)
    assert metric.aggregate([math.nan]) is None


def test_metrics_name_their_queue():
    assert get("cider_d").queue == "cpu"
    assert {get(slug).queue for slug in ("bleu_4", "meteor", "rouge_l", "spice")} == {"cpu"}
