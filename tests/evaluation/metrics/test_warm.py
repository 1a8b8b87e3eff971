"""What a worker process starts ahead (`Metric.warm`): the tokenizer's waiting JVM and METEOR's JVM
give the numbers a cold start gives, a JVM is never shared with a forked process, and the tokenised
batches are kept across batches of other captions."""

import os
from types import SimpleNamespace

import pytest

from capbench_eval.metrics import CaptionRow, get
from capbench_eval.metrics.ngram import corpus as corpus_module
from capbench_eval.metrics.ngram.corpus import CorpusMemo
from capbench_eval.metrics.ngram.meteor import MeteorProcess
from capbench_eval.metrics.ngram.tokenizer import PTBTokenizer

TEXTS = [
    "A dog runs across the grass.",
    'The colour of the grey cat, (near) the theatre -- isn\'t it "nice"?',
    "",
    "a dog\nruns .",
    "Ünïcödé café — naïve “quotes”",
]


def test_a_warm_tokenizer_keeps_a_jvm_waiting_and_answers_as_a_cold_one():
    cold, warm = PTBTokenizer(), PTBTokenizer()
    expected = cold.tokenize(TEXTS)
    assert cold._standby is None  # never warmed: nothing started ahead
    warm.warm()
    waiting = warm._standby
    assert waiting is not None and waiting.poll() is None
    assert warm.tokenize(TEXTS) == expected
    assert warm._standby is not waiting and warm._standby.poll() is None  # that one answered; the next waits
    assert waiting.poll() == 0
    assert warm.tokenize([text + " again" for text in TEXTS]) == cold.tokenize([text + " again" for text in TEXTS])
    warm._standby.kill()
    warm._standby.wait()


def test_a_tokenizer_never_writes_to_a_jvm_its_parent_started():
    tokenizer = PTBTokenizer()
    tokenizer.warm()
    parents = tokenizer._standby
    parents_pipe = os.dup(parents.stdin.fileno())  # the parent's own copy of the pipe, as after a fork
    tokenizer._standby_pid = os.getpid() + 1  # as a forked child sees its parent's
    assert tokenizer.tokenize(["Two cats."]) == ["two cats"]
    assert parents.stdin.closed  # this process's copy of its pipe let go, nothing written to it
    assert parents.poll() is None  # still waiting for the parent
    os.close(parents_pipe)
    assert parents.wait(timeout=30) == 0  # the parent gone: it reads the end of its input and stops
    tokenizer._standby.kill()
    tokenizer._standby.wait()


@pytest.mark.slow  # three METEOR JVMs
def test_warm_meteor_scores_as_a_cold_one_and_a_forked_process_starts_its_own():
    rows = [
        ("a dog runs on the grass", ["a dog is running on grass", "the dog runs", "a brown dog outside"]),
        ("two people sit on a bench", ["two men sitting on a bench", "people on a park bench", "a bench"]),
    ]
    candidates, references = [c for c, _ in rows], [r for _, r in rows]
    cold, warm, parents = MeteorProcess(), MeteorProcess(), None
    try:
        expected = cold.score(candidates, references, [0, 1, 1])
        warm.warm(rows=20)
        parents = warm._process
        assert parents is not None and parents.poll() is None
        assert warm.score(candidates, references, [0, 1, 1]) == expected  # the warm-up left nothing behind
        warm._pid = os.getpid() + 1  # as a forked child sees its parent's JVM
        assert warm.score(candidates, references, [0, 1, 1]) == expected
        assert warm._process is not parents and parents.poll() is None  # its own JVM; the parent's alive
        warm.close()
        assert parents.poll() is None  # closing never stops the parent's
    finally:
        cold.close()
        warm.close()
        if parents is not None:
            parents.kill()
            parents.wait()


def test_the_corpus_memo_keeps_several_batches(monkeypatch):
    built = []
    monkeypatch.setattr(
        corpus_module, "tokenized_corpus", lambda rows: built.append(len(rows)) or SimpleNamespace(size=len(rows))
    )

    def batch(start, size=3):
        return [CaptionRow(str(i), f"caption {i}", (f"reference {i}",)) for i in range(start, start + size)]

    memo = CorpusMemo(batches=3, rows=100)
    first = memo.get(batch(0))
    memo.get(batch(10))
    memo.get(batch(20))
    assert memo.get(batch(0)) is first
    assert built == [3, 3, 3]  # another process's batches came in between
    memo.get(batch(30))  # the oldest (batch 10) goes
    memo.get(batch(10))
    assert built == [3, 3, 3, 3, 3]
    large = CorpusMemo(batches=8, rows=5)
    whole = large.get(batch(0, size=10))  # more rows than it keeps: kept while it is the latest
    assert large.get(batch(0, size=10)) is whole
    large.get(batch(40))
    assert len(large._kept) == 1


@pytest.mark.parametrize("slug", ["bleu_4", "rouge_l", "cider_d", pytest.param("meteor", marks=pytest.mark.slow)])
def test_the_ngram_metrics_warm_the_shared_tokenizer(slug, monkeypatch):
    from capbench_eval.metrics.ngram import tokenizer

    fresh = PTBTokenizer()
    monkeypatch.setattr(tokenizer, "_shared", fresh)
    metric = get(slug)
    if slug == "meteor":
        monkeypatch.setattr(metric, "process", MeteorProcess())
    try:
        metric.warm()
        assert fresh._keep_standby and fresh._standby is not None
        if slug == "meteor":
            assert metric.process._process is not None and metric.process._process.poll() is None
    finally:
        if fresh._standby is not None:
            fresh._standby.kill()
            fresh._standby.wait()
        if slug == "meteor":
            metric.process.close()
