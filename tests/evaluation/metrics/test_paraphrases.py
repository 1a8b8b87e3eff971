"""METEOR's paraphrase table cut for a batch (capbench_eval/metrics/ngram/paraphrases.py): the index
rewrites the table's own bytes, a cut keeps every pair a batch's words could match, Meteor scores
the same on a cut as on the whole table, and a JVM whose cut falls short is replaced by one with the
whole table."""

import gzip
import os
import random
from pathlib import Path

import pytest

from capbench_eval.metrics.ngram import meteor, paraphrases
from capbench_eval.metrics.ngram.meteor import MeteorProcess
from capbench_eval.metrics.ngram.paraphrases import ParaphraseIndex, build_index
from tests.evaluation.metrics.ngram_oracle import flickr8k_rows

# A small table in Meteor's format: a probability line, then the two phrases.
PAIRS = [
    ("0.25", "dog", "hound"),
    ("1.0E-4", "a dog", "the hound"),
    ("0.5", "t-shirt", "tee"),
    ("0.125", "her", "s"),
    ("0.3333333333333333", "mom 's", "mother 's"),
    ("0.5", "dog", "puppy"),
    ("0.75", ",", "and"),
    ("0.0104536786086", "runs", "is running"),
]


def write_table(path: Path, pairs: list[tuple[str, str, str]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as file:
        file.writelines(f"{probability}\n{first}\n{second}\n" for probability, first, second in pairs)
    return path


@pytest.fixture
def small_index(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_METEOR_INDEX_DIR", str(tmp_path / "indexes"))
    table = write_table(tmp_path / "paraphrase-en.gz", PAIRS)
    return table, ParaphraseIndex(build_index(table))


def test_a_cut_keeps_the_pairs_whose_words_are_pieces_of_the_tokens_as_the_table_holds_them(small_index, tmp_path):
    table, index = small_index
    tokens = ["A", "dog's", "t-shirts", "teens", "runs", "and", "puppy"]
    # "a", "dog", "s", "t-shirt", "tee", "runs", "and", "puppy" and "," (no letter or digit) are pieces
    # of them; "hound", "her", "mom", "mother", "is" and "running" are not.
    assert index.kept(tokens).tolist() == [2, 5, 6]
    assert index.kept(["mom's", "mother's", "her"]).tolist() == [3, 4]
    cut = tmp_path / "cut.gz"
    index.write(index.kept(["hound", "dog", "the", "a", "is", "running", "runs"]), cut)
    lines = gzip.decompress(table.read_bytes()).decode().splitlines(keepends=True)
    assert gzip.decompress(cut.read_bytes()).decode() == "".join(lines[0:6] + lines[21:24])


def test_each_copy_of_a_table_shares_one_index_and_another_table_has_its_own(small_index, tmp_path):
    table, _ = small_index
    copy = tmp_path / "copy" / "paraphrase-en.gz"
    copy.parent.mkdir()
    copy.write_bytes(table.read_bytes())
    os.utime(copy, (0, 0))  # another install's time: the same content
    assert paraphrases.index_dir(copy) == paraphrases.index_dir(table)
    other = write_table(tmp_path / "other.gz", [*PAIRS, ("0.5", "cat", "kitten")])
    assert paraphrases.index_dir(other) != paraphrases.index_dir(table)
    assert build_index(copy) == paraphrases.index_dir(table)  # found, not built again


def test_a_phrase_that_is_not_single_spaced_words_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_METEOR_INDEX_DIR", str(tmp_path / "indexes"))
    table = write_table(tmp_path / "paraphrase-en.gz", [*PAIRS[:2], ("0.5", "a  dog", "hound")])
    with pytest.raises(ValueError, match="pair 3 has a phrase that is not single-spaced words"):
        build_index(table)
    assert not paraphrases.index_dir(table).exists()


def test_no_second_build_starts_while_one_holds_the_lock(tmp_path, monkeypatch):
    import fcntl

    monkeypatch.setenv("CAPBENCH_METEOR_INDEX_DIR", str(tmp_path))
    monkeypatch.setattr(paraphrases, "_build_started", False)
    started = []
    monkeypatch.setattr(paraphrases.subprocess, "Popen", lambda command, **_: started.append(command))
    with open(tmp_path / paraphrases.LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a build in progress
        paraphrases.build_index_soon()
    assert started == []
    paraphrases.build_index_soon()
    paraphrases.build_index_soon()  # once per process
    assert len(started) == 1
    assert started[0][1:] == ["-m", "capbench_eval.metrics.ngram.paraphrases"]


# Raw text, as Meteor's -norm takes it apart: contractions, hyphens, possessives, numbers, quotes,
# entities, brackets and case (the drop-in and the platform send PTB-tokenised text, simpler still).
RAW = [
    ("The dog's owner didn't see it.", ("A dog 's owner did not see it", "the owner of the dog missed it")),
    ("A man in a T-shirt, 3.5 metres away!", ("a man wearing a tee shirt", "man in a t-shirt about 3 meters off")),
    ('She said "hello" &amp; left (quickly)', ("she said hi and left fast", "a woman says hello & leaves")),
    ("U.S. soldiers -- on patrol ; at 5:30 p.m.", ("american troops patrol at dusk", "soldiers patrolling")),
    ("kids' toys aren't cheap", ("children 's toys are expensive", "the toys of the kids cost a lot")),
    ("a u.s. flag at 5 p.m.", ("an american flag in the afternoon", "the us flag at five")),
    ("a ‘quoted’ e-mail", ("an email in quotes", "a `quoted' message")),
]


@pytest.mark.slow  # two JVMs, one loading the whole table (10 s of CPU), on 1,500 rows
def test_meteor_on_a_cut_scores_as_on_the_whole_table(judgment_data, meteor_index):
    """Exactly equal, statistics lines included. Every row of Flickr8k-Expert and a quarter of
    Flickr8k-CF are scored on their cut against pycocoevalcap's whole table too, to 1e-9
    (test_ngram_oracle.py)."""
    rows = flickr8k_rows("flickr8k-expert", judgment_data / "flickr8k")
    rows += flickr8k_rows("flickr8k-cf", judgment_data / "flickr8k", every=20)
    distinct = list(dict.fromkeys((row.candidate, row.references) for row in rows))
    random.Random(0).shuffle(distinct)
    distinct = distinct[:1500] + RAW
    whole = MeteorProcess()
    whole._whole_table = True
    try:
        # the raw rows alone too: in a big batch other tokens would bring the words they need
        for batch in (distinct, RAW):
            candidates, references = [c for c, _ in batch], [r for _, r in batch]
            expand = list(range(len(batch)))
            expected = whole.score(candidates, references, expand)
            assert whole._tokens is None and "-a" not in whole._process.args
            cut = MeteorProcess()
            try:
                got = cut.score(candidates, references, expand)
                assert cut._tokens is not None and "-a" in cut._process.args
                assert got == expected  # every score, the corpus score and every statistics line
            finally:
                cut.close()
    finally:
        whole.close()


@pytest.mark.slow  # a JVM loading the whole table: 10 s of CPU
def test_a_batch_beyond_the_cut_gets_a_new_cut_and_after_cuts_of_them_the_whole_table(meteor_index, monkeypatch):
    monkeypatch.setattr(meteor, "CUTS", 2)
    first = (["a dog runs on the grass"], [("a dog is running on grass", "the brown dog runs")])
    beyond = (["two kittens sleep"], [("two cats are sleeping on a bed", "cats asleep")])
    further = (["a red bicycle"], [("a bike leans on a wall",)])
    process = MeteorProcess()
    try:
        process.start()  # with the index built: waits for the rows, to start on their cut
        assert process._process is None
        process.start(*first)
        first_jvm, table = process._process, process._table
        assert "-a" in first_jvm.args and table.exists()
        scored = process.score(*first, [0])
        assert process._process is first_jvm  # the rows it was started for
        assert process._table is None and not table.parent.exists()  # read at start: removed
        process.score(["the dog runs"], [("a brown dog runs",)], [0])  # words within the cut
        assert process._process is first_jvm
        beyond_scored = process.score(*beyond, [0])
        second_jvm = process._process
        assert second_jvm is not first_jvm and first_jvm.poll() is not None
        assert "-a" in second_jvm.args and {"dog", "grass", "kittens", "cats"} <= process._tokens
        assert process.score(*first, [0]) == scored  # the earlier batches' words are in the new cut
        assert process._process is second_jvm
        further_scored = process.score(*further, [0])
        assert process._tokens is None and "-a" not in process._process.args  # CUTS cuts: the whole table
        whole_jvm = process._process
        assert process.score(*first, [0]) == scored
        assert process.score(*beyond, [0]) == beyond_scored
        assert process._process is whole_jvm
        process._stop()
        process.start(*first)  # restarted after a stop: the whole table still (not waited for)
        assert "-a" not in process._process.args
    finally:
        process.close()
    fresh = MeteorProcess()
    try:
        assert fresh.score(*further, [0]) == further_scored
        fresh.warm(rows=5)  # a warm JVM is for whatever comes: the whole table
        assert fresh._tokens is None and "-a" not in fresh._process.args
    finally:
        fresh.close()
