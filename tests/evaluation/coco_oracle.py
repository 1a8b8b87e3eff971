"""pycocoevalcap's own `COCOEvalCap.evaluate()` on pycocotools `COCO` objects, for test_coco.py (which
compares capbench_eval.coco with it) and bench/ngram.py (which times the two).

Run as a script it evaluates the Flickr8k set `flickr8k_images` builds (SPICE left out) and writes
what pycocoevalcap gives as JSON ({"eval", "imgToEval": [[image id, values], ...], "stdout"}), so
that a test computes ours while pycocoevalcap runs in another process (each starts a METEOR JVM):

    python -m tests.evaluation.coco_oracle FLICKR8K_FOLDER COUNT OUT.json
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path

import pycocoevalcap.eval
from pycocotools.coco import COCO

References = dict[int, list[str]]
Candidates = dict[int, str]

# Made-up images appended to the Flickr8k ones, each with what it tests; their ids come after the
# Flickr8k ids and out of ascending order. "{refs:N}" takes image N's references, "{ref:N}" its first one.
AWKWARD = [
    (7, "{refs:0}", "{ref:0}"),  # the candidate is one of its references: BLEU 1, Meteor's chunk rule
    (3, "{refs:1}", "{cand:1}"),  # the same candidate and references as image 1: folded into one row
    (5, ["a black dog jumps over a log in the woods"], "a dog jumps over a log"),  # one reference
    (9, "{refs:2}", 'A DOG, running!!! (fast) -- `quoted\' "here" ... ok?'),  # case, punctuation, quotes
    (2, "{refs:3}", "dog"),  # one word: no bigram
    (8, "{refs:4}", "..."),  # nothing left once punctuation is dropped
    (4, ["a man sits at a cafe eating a creme brulee", "a man eats dessert"], "a man at a café eats crème brûlée"),
    (6, "{refs:5}", "a dog ||| runs on\nthe grass"),  # Meteor's field separator and a line break
]


def flickr8k_images(folder: Path, count: int) -> tuple[References, Candidates]:
    """`count` Flickr8k-Expert images (the first judged, in the file's order), each with one judged
    caption as its candidate and 1 to 5 of its own captions as references, then the AWKWARD ones."""
    captions: dict[str, str] = {}
    for line in (folder / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, _, text = line.partition("\t")
        captions[key] = text
    references: References = {}
    candidates: Candidates = {}
    for line in (folder / "ExpertAnnotations.txt").read_text(encoding="utf-8").splitlines():
        image, judged = line.split("\t")[:2]
        image_id = int(image.split("_")[0])
        if image_id in references or len(references) == count:
            continue
        kept = 1 + len(references) % 5
        references[image_id] = [captions[f"{image}#{n}"] for n in range(5)][:kept]
        candidates[image_id] = captions[judged]
    flickr = list(references)
    for image_id, refs, candidate in AWKWARD:
        references[image_id] = _filled(refs, flickr, references, candidates)
        candidates[image_id] = _filled(candidate, flickr, references, candidates)
    return references, candidates


def _filled(value, flickr: list[int], references: References, candidates: Candidates):
    if not isinstance(value, str) or not value.startswith("{") or not value.endswith("}"):
        return value
    kind, _, index = value[1:-1].partition(":")
    image_id = flickr[int(index)]
    return {"refs": list(references[image_id]), "ref": references[image_id][0], "cand": candidates[image_id]}[kind]


def coco_objects(references: Mapping, candidates: Mapping) -> tuple[COCO, COCO]:
    """pycocotools' ground truth and `loadRes` result objects, built in memory (their prints dropped)."""
    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = {
            "images": [{"id": image_id} for image_id in references],
            "annotations": [
                {"image_id": image_id, "id": number, "caption": caption}
                for number, (image_id, caption) in enumerate(
                    ((image_id, caption) for image_id, refs in references.items() for caption in refs), 1
                )
            ],
        }
        coco.createIndex()
        results = coco.loadRes([{"image_id": image_id, "caption": text} for image_id, text in candidates.items()])
    return coco, results


class Absent:
    """Stands in for a pycocoevalcap scorer left out, every image NaN: Spice (its constructor downloads
    CoreNLP into the wheel, and its jar's cache fails on Java >= 16), Meteor where a fast test does
    without its JVM. `pycocoevalcap_evaluate` drops their entries."""

    def __init__(self, method: str) -> None:
        self._method = method

    def compute_score(self, gts, res):
        return math.nan, [math.nan] * len(gts)

    def method(self) -> str:
        return self._method


KEYS = {"Spice": "SPICE", "Meteor": "METEOR"}  # the scorers that may be left out, and their key


def pycocoevalcap_evaluate(coco: COCO, results: COCO, left_out: tuple[str, ...] = ("Spice",)) -> tuple[object, str]:
    """pycocoevalcap's `COCOEvalCap(coco, results).evaluate()` with the scorers `left_out` ("Spice",
    "Meteor") replaced by Absent and their entries dropped, and what it printed."""
    printed = io.StringIO()
    originals = {name: getattr(pycocoevalcap.eval, name) for name in left_out}
    for name in left_out:
        setattr(pycocoevalcap.eval, name, functools.partial(Absent, KEYS[name]))
    try:
        evaluator = pycocoevalcap.eval.COCOEvalCap(coco, results)
        with contextlib.redirect_stdout(printed):
            evaluator.evaluate()
    finally:
        for name, original in originals.items():
            setattr(pycocoevalcap.eval, name, original)
    for key in (KEYS[name] for name in left_out):
        evaluator.eval.pop(key)
        for values in evaluator.imgToEval.values():
            values.pop(key)
    return evaluator, printed.getvalue()


def main(argv: list[str]) -> int:
    folder, count, out = argv
    coco, results = coco_objects(*flickr8k_images(Path(folder), int(count)))
    evaluator, printed = pycocoevalcap_evaluate(coco, results)
    answer = {
        "eval": {key: float(value) for key, value in evaluator.eval.items()},
        "imgToEval": [[image_id, _plain(values)] for image_id, values in evaluator.imgToEval.items()],
        "stdout": printed,
    }
    partial = Path(out + ".partial")
    partial.write_text(json.dumps(answer))
    partial.rename(out)
    return 0


def _plain(values: dict) -> dict:
    return {key: value if isinstance(value, dict | int) else float(value) for key, value in values.items()}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
