"""Edge cases of the n-gram metrics and the registry (small inputs, real Java tokenizer)."""

import random

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow, get, register, slugs
from capbench_eval.metrics.ngram.bleu import bleu_scores, bleu_stats
from capbench_eval.metrics.ngram.rouge import lcs_length
from capbench_eval.metrics.ngram.tokenizer import ptb_tokenize


def test_registry_lists_and_refuses_unknown_or_duplicate_slugs():
    assert {"bleu_1", "bleu_4", "rouge_l", "cider_d"} <= set(slugs())
    with pytest.raises(KeyError, match="unknown metric 'nope'"):
        get("nope")
    with pytest.raises(ValueError, match="registered twice"):
        register("rouge_l", lambda: None)
    assert get("bleu_2") is get("bleu_2")
    assert get("bleu_2").config_hash() != get("bleu_3").config_hash()


def test_ptb_tokenizer_matches_the_documented_example():
    text = 'The colour of the grey cat, (near) the theatre -- isn\'t it "nice"?'
    assert ptb_tokenize([text]) == ["the colour of the grey cat -lrb- near -rrb- the theatre is n't it nice"]


def test_ptb_tokenizer_keeps_lines_aligned_with_embedded_line_breaks():
    assert ptb_tokenize(["a dog\nruns .", "", "two cats"]) == ["a dog runs", "", "two cats"]


def test_bleu_closest_reference_length_ties_go_to_the_shorter():
    stats = bleu_stats("a b c d", ["a b c", "a b c d e"])
    assert stats.reflen == 3


def test_bleu_without_4gram_matches_is_tiny_not_zero():
    scores = bleu_scores(bleu_stats("a b c d e", ["a b x c d"]))
    assert 0 < scores[3] < 1e-3


def test_lcs_bit_parallel_equals_dynamic_programming():
    generator = random.Random(0)
    for _ in range(300):
        a = [generator.choice("abcd") for _ in range(generator.randint(0, 12))]
        b = [generator.choice("abcd") for _ in range(generator.randint(0, 12))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(len(a)):
            for j in range(len(b)):
                table[i + 1][j + 1] = table[i][j] + 1 if a[i] == b[j] else max(table[i][j + 1], table[i + 1][j])
        assert lcs_length(a, b) == table[-1][-1]


def test_cider_depends_on_the_batch():
    row = CaptionRow("1", "a dog runs on grass", ("a dog runs on the grass", "a brown dog running"))
    other = CaptionRow("2", "two cats sleep", ("two cats are sleeping", "cats asleep on a bed"))
    assert get("cider_d").score([row]).scores == [0.0]  # one document: log(1) = 0, every weight 0
    assert get("cider_d").score([row, other]).scores[0] > 0


def test_rows_without_references_are_refused_by_name():
    with pytest.raises(ValueError, match="row 'x7': this metric needs at least one reference"):
        get("bleu_1").score([CaptionRow("x7", "a dog", ())])


def test_duplicate_rows_score_alike_and_count_in_the_corpus():
    rows = [CaptionRow(str(i), "a dog runs", ("a dog is running", "dog runs fast")) for i in range(3)]
    rows.append(CaptionRow("3", "a cat", ("a cat sits", "the cat")))
    result = get("rouge_l").score(rows)
    assert result.scores[0] == result.scores[1] == result.scores[2]
    assert result.corpus == pytest.approx(sum(result.scores) / 4)


@pytest.mark.slow
@pytest.mark.usefixtures("meteor_index")  # on a cut of the paraphrase table, not the whole
def test_meteor_survives_a_killed_jvm_and_scores_the_same():
    meteor = get("meteor")
    rows = [
        CaptionRow("1", "a dog runs on the grass", ("a dog is running on grass", "the brown dog runs")),
        CaptionRow("2", "two cats sleep", ("two cats are sleeping on a bed", "cats asleep")),
        CaptionRow("3", "a dog runs on the grass", ("a dog is running on grass", "the brown dog runs")),
    ]
    first = meteor.score(rows)
    assert first.scores[0] == first.scores[2]
    assert 0 < first.scores[1] < first.scores[0] < 1
    meteor.process._process.kill()
    meteor.process._process.wait()
    again = meteor.score(rows)
    assert again.scores == first.scores
    assert again.corpus == first.corpus
    assert meteor.availability().available


def test_bleu_orders_follow_each_new_batch():
    first = [CaptionRow("1", "a dog runs", ("a dog runs",))]
    second = [CaptionRow("1", "a cat sleeps here", ("the dog runs far away",))]
    for _ in range(20):  # alternate batches: a stale cache would return the other batch's numbers
        assert get("bleu_1").score(first).scores[0] == pytest.approx(1.0)
        assert get("bleu_4").score(second).scores[0] < 0.01


def test_tokenizer_cache_never_evicts_what_the_current_call_needs(monkeypatch):
    from capbench_eval.metrics.ngram import tokenizer

    monkeypatch.setattr(tokenizer, "CACHE_SIZE", 3)
    fresh = tokenizer.PTBTokenizer()
    assert fresh.tokenize(["A dog", "Two cats", "Three birds"]) == ["a dog", "two cats", "three birds"]
    # Two cached texts and three new ones: more than the cache holds, all must come back.
    assert fresh.tokenize(["A dog", "Two cats", "A fish", "A cow", "A hen"]) == [
        "a dog",
        "two cats",
        "a fish",
        "a cow",
        "a hen",
    ]
    assert len(fresh._cache) == 3


@pytest.mark.usefixtures("meteor_index")  # on a cut of the paraphrase table, not the whole
def test_meteor_statistics_are_kept_short_and_aggregate_as_printed():
    """Stored on every METEOR score row: "6 4 3 …" instead of "6.0 4.0 3.0 …", and the corpus
    METEOR Meteor computes from them is the one it computes from its own lines."""
    from capbench_eval.metrics.ngram.meteor import compact_statistics

    assert compact_statistics("6.0 4.0 0.0 12.0 3.5 1e3") == "6 4 0 12 3.5 1e3"
    meteor = get("meteor")
    rows = [
        CaptionRow("1", "a dog runs on the grass", ("a dog is running on grass", "the brown dog runs")),
        CaptionRow("2", "two men play football in a park", ("men playing soccer", "two people play ball")),
    ]
    result = meteor.score(rows)
    assert all(".0" not in line and len(line.split()) > 20 for line in result.statistics)
    printed = [" ".join(f"{float(field):.1f}" for field in line.split()) for line in result.statistics]
    assert meteor.aggregate(result.scores, result.statistics) == meteor.aggregate(result.scores, printed)
    assert meteor.aggregate(result.scores, result.statistics) == pytest.approx(result.corpus, abs=1e-15)


@pytest.mark.slow
def test_meteor_from_summed_statistics_is_meteors_own_aggregate(meteor_index):
    """A system's METEOR (and each bootstrap replicate of it) is computed from summed statistics in
    numpy, never by the JVM: equal to Meteor's own EVAL over the same lines, rows and subsets alike,
    among them exact matches (Meteor counts no chunk for those), empty and unmatched candidates."""
    from capbench_eval.metrics.ngram.meteor import MeteorProcess

    draw = random.Random(3)
    words = ["a", "the", "man", "dog", "cat", "runs", "sits", "on", "in", "grass", "water", "red", "ball"]

    def sentence(shortest: int = 0) -> str:
        return " ".join(draw.choice(words) for _ in range(draw.randint(shortest, 6)))

    rows = []
    for i in range(300):
        references = tuple(sentence(1) for _ in range(draw.randint(1, 4)))
        candidate = draw.choice(references) if draw.random() < 0.3 else sentence()
        rows.append(CaptionRow(str(i), candidate, references))
    meteor = get("meteor")
    result = meteor.score(rows)
    totals = meteor.caption_totals(np.array(result.scores), result.statistics)
    assert meteor.from_totals(totals) == pytest.approx(result.scores, abs=1e-15)
    assert meteor.aggregate(result.scores, result.statistics) == pytest.approx(result.corpus, abs=1e-15)
    process = MeteorProcess()
    try:
        for _ in range(20):
            chosen = [draw.randrange(len(rows)) for _ in range(draw.randint(1, 40))]
            lines = [result.statistics[i] for i in chosen]
            answers = process._exchange(
                process._running(frozenset()), ["EVAL ||| " + " ||| ".join(lines)], len(lines) + 1
            )
            assert meteor.aggregate([], lines) == pytest.approx(float(answers[-1]), abs=1e-15)
        weights = np.array([[draw.randint(0, 2) for _ in rows] for _ in range(5)])
        drawn = meteor.resampled(np.array(result.scores), result.statistics, weights)
        for weight, value in zip(weights, drawn, strict=True):
            lines = [line for line, times in zip(result.statistics, weight, strict=True) for _ in range(times)]
            answers = process._exchange(
                process._running(frozenset()), ["EVAL ||| " + " ||| ".join(lines)], len(lines) + 1
            )
            assert value == pytest.approx(float(answers[-1]), abs=1e-15)
    finally:
        process.close()
