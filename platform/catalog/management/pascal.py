"""Pascal-50S pairwise accuracy of the reference-based metrics, for `manage.py reproduce pascal50s`."""

from __future__ import annotations

import random
from typing import cast

import numpy as np

from capbench_eval.metaeval.pairwise import accuracy_by_category
from capbench_eval.metaeval.published import published_of
from capbench_eval.metrics import CaptionRow, MetricUnavailable, get
from capbench_eval.metrics.ngram.meteor import Meteor
from capbench_eval.metrics.ngram.tokenizer import ptb_tokenize
from catalog.importers.bundle import DatasetBundle, PairRow

CATEGORIES = ("HC", "HI", "HM", "MM", "mean")


def pascal_accuracy(bundle: DatasetBundle, *, draws: int, seed: int, stdout) -> None:
    """Per metric: the file's fixed draw (under each tie convention), K random 5-reference draws
    from the pool (draw k uses seed + k, printed), their mean and standard deviation, and the
    papers' numbers (the mean of their 5 draws, which are not published)."""
    texts = {caption.key: caption.text for caption in bundle.captions}
    pool = {item.external_id: item.references for item in bundle.items}
    pairs = bundle.pairs
    fixed = [_file_draw(pair) for pair in pairs]
    drawn = {seed + k: draw_references(random.Random(seed + k), pool, pairs) for k in range(draws)}
    stdout.write(
        f"pascal50s: {len(pairs):,} pairs; accuracy %; strict (a metric tie counts as wrong) unless said, "
        f"ties in brackets; K = {draws} random draws of 5 references, draw k with seed {seed} + k"
    )
    stdout.write(f"{'metric':8} {'protocol':28} " + " ".join(f"{c:>12}" for c in CATEGORIES))
    slugs = list(dict.fromkeys(entry.metric for entry in published_of("pascal50s")))
    if "meteor" in slugs:
        _meteor_start(pairs, texts, [fixed, *drawn.values()])
    for slug in slugs:
        try:
            _metric_report(slug, pairs, texts, fixed, drawn, stdout)
        except MetricUnavailable as error:  # (no Java, no pycocoevalcap wheel): said, and the others go on
            stdout.write(f"{slug:8} unavailable: {error}")


def _metric_report(slug: str, pairs: list, texts: dict, fixed: list, drawn: dict[int, list], stdout) -> None:
    """One metric's lines: the file's draw, each random draw, their mean and spread, the paper's."""
    draws = len(drawn)
    published = {e.dimension: e.value for e in published_of("pascal50s") if e.metric == slug}
    result = _accuracies(slug, pairs, texts, fixed)
    stdout.write(f"{slug:8} {'fixed draw (file)':28} " + _row(result, "strict", ties=True))
    stdout.write(f"{slug:8} {'fixed draw, ties count half':28} " + _row(result, "ties_half"))
    stdout.write(f"{slug:8} {'fixed draw, ties to the 2nd':28} " + _row(result, "ties_second"))
    strict: dict[str, list[float]] = {category: [] for category in CATEGORIES}
    for draw_seed, references in drawn.items():
        drawn_result = _accuracies(slug, pairs, texts, references)
        for category in CATEGORIES:
            strict[category].append(100 * drawn_result[category].strict)
        stdout.write(f"{slug:8} {f'draw (seed {draw_seed})':28} " + _row(drawn_result, "strict", ties=True))
    if draws:
        stdout.write(
            f"{slug:8} {'mean of the draws':28} " + " ".join(f"{np.mean(strict[c]):12.1f}" for c in CATEGORIES)
        )
        stdout.write(
            f"{slug:8} {'sd of the draws':28} "
            + " ".join(f"{np.std(strict[c], ddof=1) if draws > 1 else 0:12.2f}" for c in CATEGORIES)
        )
    stdout.write(f"{slug:8} {'paper':28} " + " ".join(f"{published[c]:12.1f}" for c in CATEGORIES))
    if draws > 1:  # the papers' draws are not published: a difference is judged against the draws' spread
        means = {c: float(np.mean(strict[c])) for c in CATEGORIES}
        spreads = {c: float(np.std(strict[c], ddof=1)) for c in CATEGORIES}
        stdout.write(
            f"{slug:8} {'Δ (mean of draws − paper)':28} "
            + " ".join(f"{means[c] - published[c]:+12.1f}" for c in CATEGORIES)
        )
        stdout.write(
            f"{slug:8} {'paper within mean ± 2 sd':28} "
            + " ".join(f"{'yes' if abs(means[c] - published[c]) <= 2 * spreads[c] else 'no':>12}" for c in CATEGORIES)
        )


def draw_references(generator: random.Random, pool: dict[str, list[str]], pairs: list[PairRow]) -> list[list[str]]:
    """One draw: 5 references from each pair's pool, one generator across the pairs (each pair its own draw)."""
    return [generator.sample(pool[pair.item], 5) for pair in pairs]


def _row(result: dict, convention: str, *, ties: bool = False) -> str:
    if ties:
        return " ".join(f"{100 * getattr(result[c], convention):6.1f} ({result[c].ties:3d})" for c in CATEGORIES)
    return " ".join(f"{100 * getattr(result[c], convention):12.1f}" for c in CATEGORIES)


def _file_draw(pair: PairRow) -> list[str]:
    if pair.references is None:  # the Pascal-50S importer gives every pair the file's draw
        raise ValueError(f"pair {pair.external_id!r} has no reference draw")
    return pair.references


def _meteor_start(pairs: list, texts: dict, draws: list[list[list[str]]]) -> None:
    """METEOR's JVM started once, on the paraphrase pairs the words of every draw can match
    (docs/metrics.md §2; the whole table until its index is built): otherwise each draw with a word
    the running JVM's cut lacks starts another, and the fifth such JVM (`CUTS`) loads the whole
    table. Each distinct text tokenised once (kept for the scoring); nothing if METEOR cannot run
    here (its scoring then says why), or if this process already runs a JVM."""
    meteor = cast(Meteor, get("meteor"))
    if meteor.unavailable_reason() is not None:
        return
    captions = dict.fromkeys(texts[key] for pair in pairs for key in (pair.caption_a, pair.caption_b))
    references = dict.fromkeys(text for draw in draws for refs in draw for text in refs)
    try:
        meteor.process.start(ptb_tokenize(captions), [ptb_tokenize(references)])
    except MetricUnavailable:
        return  # (the tokenizer cannot run: every metric's lines say so)


def _accuracies(slug: str, pairs: list, texts: dict, references: list[list[str]]) -> dict:
    rows = []
    for index, (pair, refs) in enumerate(zip(pairs, references, strict=True)):
        rows.append(CaptionRow(f"{index}a", texts[pair.caption_a], tuple(refs)))
        rows.append(CaptionRow(f"{index}b", texts[pair.caption_b], tuple(refs)))
    scores = get(slug).score(rows).scores  # one corpus of all pair captions (CIDEr-D frequencies)
    return accuracy_by_category(scores[0::2], scores[1::2], [p.winner for p in pairs], [p.category for p in pairs])
