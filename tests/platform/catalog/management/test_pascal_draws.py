"""Pascal-50S's K reference draws for `manage.py reproduce pascal50s`: one generator per draw,
each pair its own sample (two pairs of one image do not get the same five references), and the
same seed the same draw; METEOR scores every draw on one JVM."""

import random
from types import SimpleNamespace

import pytest

from capbench_eval.metaeval.published import published_of
from capbench_eval.metrics import get
from capbench_eval.metrics.ngram import tokenizer
from capbench_eval.metrics.ngram.meteor import MeteorProcess
from catalog.importers.bundle import CaptionKey, CaptionRow, DatasetBundle, DatasetInfo, ItemRow, PairRow
from catalog.management import pascal
from catalog.management.pascal import draw_references, pascal_accuracy


def _pairs(count: int) -> list[PairRow]:
    key = CaptionKey(item="img.jpg", system="s")
    return [PairRow(external_id=str(n), item="img.jpg", caption_a=key, caption_b=key) for n in range(count)]


def test_each_pair_of_a_draw_gets_its_own_sample_and_a_seed_repeats_the_draw():
    pool = {"img.jpg": [f"reference {n}" for n in range(50)]}
    pairs = _pairs(20)
    first = draw_references(random.Random(12345), pool, pairs)
    assert all(len(set(refs)) == 5 and set(refs) <= set(pool["img.jpg"]) for refs in first)
    assert len({tuple(refs) for refs in first}) > 15  # not one sample repeated for every pair
    assert draw_references(random.Random(12345), pool, pairs) == first
    assert draw_references(random.Random(12346), pool, pairs) != first


WORDS = "dog cat horse bird boat car tree river hill road bench kite ball field beach snow child woman man bike"


def _small_bundle(prefix: str = "a") -> DatasetBundle:
    """Four images, each with a pool of ten references (each with a word of its own), and a pair per
    category on each (the file's draw: the first five references); every text starts with `prefix`."""
    words = WORDS.split()
    items, captions, pairs = [], [], []
    for image in range(4):
        pool = [f"{prefix} {words[(image * 10 + n) % len(words)]} number{image}x{n} near place{n}" for n in range(10)]
        items.append(ItemRow(external_id=f"{image}.jpg", media=None, references=pool))
        for category in ("HC", "HI", "HM", "MM"):
            a = CaptionKey(item=f"{image}.jpg", system="s", external_id=f"{image}{category}a")
            b = CaptionKey(item=f"{image}.jpg", system="s", external_id=f"{image}{category}b")
            captions += [
                CaptionRow(a, f"{prefix} {words[image]} in the picture"),
                CaptionRow(b, f"{prefix} other thing"),
            ]
            pairs.append(
                PairRow(f"{image}{category}", f"{image}.jpg", a, b, category=category, winner="a", references=pool[:5])
            )
    info = DatasetInfo(slug="small-pascal", title="Small", source_format="pascal50s", kind="pairwise")
    return DatasetBundle(info=info, items=items, captions=captions, pairs=pairs)


def _meteor_lines(monkeypatch) -> tuple[list[str], int, bool]:
    """METEOR's printed lines for six draws on JVMs of the run's own (closed after), how many of
    them were started on a cut, and whether the last was."""
    process = MeteorProcess()
    monkeypatch.setattr(get("meteor"), "process", process)
    printed = SimpleNamespace(lines=[])
    printed.write = printed.lines.append  # a command's stdout: a line a call
    try:
        pascal_accuracy(_small_bundle(), draws=6, seed=7, stdout=printed)
        on_cut = process._process is not None and "-a" in process._process.args
        return [line for line in printed.lines if line.startswith("meteor")], process._cuts, on_cut
    finally:
        process.close()


@pytest.mark.slow  # METEOR's JVMs
def test_meteor_scores_every_draw_on_one_jvm_with_the_same_numbers(meteor_index, monkeypatch):
    """Six draws, three of which hold references the draws before them lack: one JVM, on the cut
    of all of them, and the numbers of a JVM per new draw (what the command did before)."""
    lines, cuts, on_cut = _meteor_lines(monkeypatch)
    assert cuts == 1
    assert on_cut
    assert sum("draw (seed" in line for line in lines) == 6
    monkeypatch.setattr(pascal, "_meteor_start", lambda *args: None)
    one_per_draw, cuts, _ = _meteor_lines(monkeypatch)
    assert cuts == 3
    assert one_per_draw == lines


def test_without_java_each_metric_says_it_cannot_run_and_nothing_crashes(monkeypatch):
    monkeypatch.setenv("CAPBENCH_JAVA", "/nonexistent/bin/java")
    monkeypatch.setattr(tokenizer, "_shared", tokenizer.PTBTokenizer())  # nothing tokenised yet
    monkeypatch.setattr(get("meteor"), "process", MeteorProcess())
    printed = SimpleNamespace(lines=[])
    printed.write = printed.lines.append
    pascal_accuracy(_small_bundle(prefix="unseen"), draws=2, seed=7, stdout=printed)  # texts no corpus memo holds
    slugs = list(dict.fromkeys(entry.metric for entry in published_of("pascal50s")))
    assert {"bleu_4", "cider_d", "meteor"} <= set(slugs)
    for slug in slugs:
        assert any(line.startswith(f"{slug:8} unavailable: Java could not be started") for line in printed.lines)
    assert not any("fixed draw" in line for line in printed.lines)
