"""Pascal-50S pairwise accuracy of the reference-based metrics, for `manage.py reproduce pascal50s`."""

from __future__ import annotations

import random

from catalog.importers.bundle import DatasetBundle, PairRow
from evaluation.metaeval.pairwise import accuracy_by_category
from evaluation.metaeval.published import PASCAL_ACCURACY
from evaluation.metrics import CaptionRow, get

CATEGORIES = ("HC", "HI", "HM", "MM", "mean")


def pascal_accuracy(bundle: DatasetBundle, *, draws: int, seed: int, stdout) -> None:
    texts = {caption.key: caption.text for caption in bundle.captions}
    pool = {item.external_id: item.references for item in bundle.items}
    pairs = bundle.pairs
    protocols = {"fixed draw (file)": [_file_draw(pair) for pair in pairs]}
    generator = random.Random(seed)
    for draw in range(draws):
        protocols[f"draw {draw + 1} of 5 from the pool"] = [generator.sample(pool[pair.item], 5) for pair in pairs]
    stdout.write(
        f"pascal50s: {len(pairs):,} pairs; strict accuracy % (a metric tie counts as wrong), "
        f"ties in brackets; papers average {draws} random draws"
    )
    stdout.write(f"{'metric':8} {'protocol':28} " + " ".join(f"{c:>12}" for c in CATEGORIES))
    for slug, published in PASCAL_ACCURACY.items():
        averages = dict.fromkeys(CATEGORIES, 0.0)
        for name, references in protocols.items():
            result = _accuracies(slug, pairs, texts, references)
            if name.startswith("draw"):
                for category in CATEGORIES:
                    averages[category] += result[category].strict / draws
            stdout.write(
                f"{slug:8} {name:28} "
                + " ".join(f"{100 * result[c].strict:6.1f} ({result[c].ties:3d})" for c in CATEGORIES)
            )
        if draws:
            stdout.write(
                f"{slug:8} {'mean of the draws':28} " + " ".join(f"{100 * averages[c]:12.1f}" for c in CATEGORIES)
            )
        stdout.write(f"{slug:8} {'paper':28} " + " ".join(f"{published[c]:12.1f}" for c in CATEGORIES))


def _file_draw(pair: PairRow) -> list[str]:
    if pair.references is None:  # the Pascal-50S importer gives every pair the file's draw
        raise ValueError(f"pair {pair.external_id!r} has no reference draw")
    return pair.references


def _accuracies(slug: str, pairs: list, texts: dict, references: list[list[str]]) -> dict:
    rows = []
    for index, (pair, refs) in enumerate(zip(pairs, references, strict=True)):
        rows.append(CaptionRow(f"{index}a", texts[pair.caption_a], tuple(refs)))
        rows.append(CaptionRow(f"{index}b", texts[pair.caption_b], tuple(refs)))
    scores = get(slug).score(rows).scores  # one corpus of all pair captions (CIDEr-D frequencies)
    return accuracy_by_category(scores[0::2], scores[1::2], [p.winner for p in pairs], [p.category for p in pairs])
