"""A drop-in for pycocoevalcap's `COCOEvalCap` (docs/library.md, "The pycocoevalcap drop-in"): the
same constructor, `params['image_id']`, `evaluate()`, `.eval`, `.imgToEval`, `.evalImgs` and
printed progress, computed with CapBench's own metrics (docs/metrics.md §0-§5), which give
pycocoevalcap 1.2's numbers per image and for the whole set (at most the last bit of a double apart;
tests/evaluation/test_coco.py). Switching a script is one line:

    from capbench_eval.coco import COCOEvalCap      # was: from pycocoevalcap.eval import COCOEvalCap
    # or: from capbench_eval import COCOEvalCap

It reads pycocotools' `COCO(...)` and `coco.loadRes(...)` objects (anything with `getImgIds()` and
an `imgToAnns` mapping) and plain Python data, without pycocotools:

>>> from capbench_eval.coco import COCOEvalCap
>>> references = {
...     1: ["a dog is running on the grass", "a brown dog runs through a field"],
...     2: ["a man is riding a bike on a road", "a cyclist rides down the street"],
...     3: ["two kids are playing in the snow", "children play outside in winter"],
... }
>>> results = [
...     {"image_id": 1, "caption": "A dog is running across the grass."},
...     {"image_id": 2, "caption": "A man rides a red bike down the road."},
...     {"image_id": 3, "caption": "Two children play in the snow."},
... ]
>>> evaluator = COCOEvalCap(references, results, spice=False, verbose=False)
>>> evaluator.evaluate()
>>> {metric: round(value, 3) for metric, value in evaluator.eval.items()}
{'Bleu_1': 0.909, 'Bleu_2': 0.656, 'Bleu_3': 0.432, 'Bleu_4': 0.281, 'METEOR': 0.42, 'ROUGE_L': 0.7, 'CIDEr': 2.347}
>>> round(evaluator.imgToEval[2]["CIDEr"], 3)
1.579

The inputs, each side the same way:

- a pycocotools `COCO` object, or any object with `getImgIds()` and `imgToAnns` ({image id: [{"caption":
  text, ...}, ...]});
- a COCO-format dict, `{"annotations": [{"image_id": ..., "caption": ...}, ...]}`, with `"images": [{"id":
  ...}, ...]` optional (its ids, in its order, are `getImgIds()`; otherwise the annotations' ids in order);
- a results list, `[{"image_id": ..., "caption": ...}, ...]` (what a results file holds);
- a mapping {image id: caption or [caption, ...]} (a caption may also be `{"caption": text}`; its keys,
  in order, are `getImgIds()`);
- the path of a JSON file holding one of the last three.

Image ids are compared as given: `1` and `"1"` are different images.

As in pycocoevalcap 1.2, `params['image_id']` starts as the references' `getImgIds()`; to score only
the results' images, set `evaluator.params['image_id'] = cocoRes.getImgIds()` before `evaluate()`.
Each image scored needs at least one reference and exactly one caption in the results, and every
image in the results needs references: anything else (or a caption that is not a string) raises
ValueError naming the image, where pycocoevalcap fails an assertion or scores the wrong image.

SPICE is computed when it can run here (`capbench_eval.metrics.get("spice").unavailable_reason()` is
None: Java and the CoreNLP 3.6.0 jars). When not, the reason is printed (a RuntimeWarning with
`verbose=False`), kept in `.unavailable`, and the other metrics are computed: `.eval` and
`.imgToEval` then have no "SPICE" key. `spice=False` leaves SPICE out without a notice;
`spice=True` raises MetricUnavailable before scoring anything if it cannot run.

Differences from pycocoevalcap 1.2, all on SPICE: an image's SPICE in `.imgToEval` holds the F-score
of each category (`{"All": {"f": 0.4}, "Object": {"f": ...}, ...}`; pycocoevalcap's also has pr, re,
tp, fp, fn, numImages), and it is the image's own, where pycocoevalcap's is shifted to another image
whenever `params['image_id']` is not in ascending order (it pairs scores in sorted order with images
in the given order); the corpus SPICE, the mean, is the same.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, cast

import numpy as np

from capbench_eval.metrics import CaptionRow, MetricResult, MetricUnavailable, get
from capbench_eval.metrics.ngram.bleu import SMALL, TINY
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.meteor import Meteor

__all__ = ["COCOEvalCap", "CaptionSet"]

# pycocoevalcap's scorers in its order: the name its "computing ... score" line prints, CapBench's
# metrics and the keys of `.eval`.
SCORERS = (
    ("Bleu", ("bleu_1", "bleu_2", "bleu_3", "bleu_4"), ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4")),
    ("METEOR", ("meteor",), ("METEOR",)),
    ("Rouge", ("rouge_l",), ("ROUGE_L",)),
    ("CIDEr", ("cider_d",), ("CIDEr",)),
    ("SPICE", ("spice",), ("SPICE",)),
)
# Whose corpus number is the metric's own corpus statistic (corpus BLEU, Meteor's aggregate); the
# others' is the mean of the per-image scores, as pycocoevalcap takes it.
CORPUS_STATISTIC = frozenset({"Bleu", "METEOR"})
IN_JAVA = frozenset({"METEOR", "SPICE"})  # computed by a JVM of their own: started first, in threads


class CocoLike(Protocol):
    """What is read of a pycocotools `COCO` object."""

    @property
    def imgToAnns(self) -> Mapping[Any, Sequence[Any]]: ...

    def getImgIds(self) -> list: ...


class CaptionSet:
    """The plain inputs read as a pycocotools `COCO` object is read: `imgToAnns` ({image id:
    [{"image_id": id, "caption": text}, ...]}) and `getImgIds()` (the given ids, or the
    annotations' in the order they first appear)."""

    def __init__(
        self, annotations: Iterable[object], image_ids: Iterable[object] | None = None, what: str = "captions"
    ):
        self.imgToAnns: dict[Any, list[dict]] = {}
        for index, annotation in enumerate(annotations):
            if not isinstance(annotation, Mapping) or "image_id" not in annotation:
                raise ValueError(f"{what}: entry {index} is not an object with an 'image_id'")
            self.imgToAnns.setdefault(annotation["image_id"], []).append(dict(annotation))
        self._ids = list(self.imgToAnns) if image_ids is None else list(image_ids)

    def getImgIds(self) -> list:
        return list(self._ids)


def caption_set(given: object, what: str) -> CocoLike:
    """`given` as COCOEvalCap reads it: a COCO-like object as it is, the plain inputs (the module's
    docstring lists them) as a CaptionSet."""
    if hasattr(given, "getImgIds") and hasattr(given, "imgToAnns"):
        return cast(CocoLike, given)  # duck-typed: pycocotools' COCO and the like
    if isinstance(given, str | os.PathLike):
        given = _read_json(given, what)
    if isinstance(given, Mapping) and "annotations" in given:
        return CaptionSet(_listed(given["annotations"], f"{what}: 'annotations'"), _image_ids(given, what), what)
    if isinstance(given, Mapping):
        return CaptionSet(_from_mapping(given), list(given), what)
    return CaptionSet(_listed(given, what), None, what)


def _read_json(path: str | os.PathLike, what: str) -> object:
    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        raise ValueError(f"{what}: cannot read {os.fspath(path)!r} as JSON ({error})") from None


def _listed(given: object, what: str) -> list:
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise ValueError(
            f"{what}: expected a COCO object, a COCO-format dict, a list of {{'image_id', 'caption'}} "
            f"objects or a mapping of image ids to captions, not {type(given).__name__}"
        )
    return list(given)


def _image_ids(dataset: Mapping, what: str) -> list | None:
    if "images" not in dataset:
        return None
    images = _listed(dataset["images"], f"{what}: 'images'")
    for index, image in enumerate(images):
        if not isinstance(image, Mapping) or "id" not in image:
            raise ValueError(f"{what}: 'images' entry {index} is not an object with an 'id'")
    return [image["id"] for image in images]


def _from_mapping(given: Mapping) -> list[dict]:
    """{image id: caption or [caption or {"caption": caption}, ...]} as annotations."""
    annotations = []
    for image_id, captions in given.items():
        single = isinstance(captions, str | Mapping) or not isinstance(captions, Iterable)
        for caption in [captions] if single else captions:
            entry = dict(caption) if isinstance(caption, Mapping) else {"caption": caption}
            annotations.append({**entry, "image_id": image_id})
    return annotations


class COCOEvalCap:
    """pycocoevalcap's `COCOEvalCap(coco, cocoRes)` on CapBench's metrics, with the same attributes:
    `params` ({"image_id": [...]}, the images `evaluate()` scores), `eval` ({"Bleu_1": ..., "CIDEr":
    ..., "SPICE": ...}), `imgToEval` ({image id: {"image_id": id, "Bleu_1": ..., ...}}), `evalImgs`
    (imgToEval's values). `verbose=False` prints nothing; `spice`: None computes SPICE where it can
    run (a notice naming why not otherwise), False never, True or MetricUnavailable. `unavailable`
    says which metric was left out and why."""

    def __init__(self, coco: object, cocoRes: object, *, verbose: bool = True, spice: bool | None = None):
        self.evalImgs: list[dict] = []
        self.eval: dict[str, Any] = {}
        self.imgToEval: dict[Any, dict[str, Any]] = {}
        self.unavailable: dict[str, str] = {}
        self.coco = caption_set(coco, "references")
        self.cocoRes = caption_set(cocoRes, "results")
        self.params: dict[str, list] = {"image_id": self.coco.getImgIds()}
        self.verbose = verbose
        self.spice = spice

    def evaluate(self) -> None:
        """Score the results' caption of every image of `params['image_id']` against its references:
        every metric on the whole set at once (CIDEr-D's document frequencies from these images'
        references), PTB tokenisation included, as pycocoevalcap's `evaluate()` does."""
        ids = list(dict.fromkeys(self.params["image_id"]))
        rows = self._rows(ids)
        spice_reason = None if self.spice is False else get("spice").unavailable_reason()
        if self.spice and spice_reason:
            raise MetricUnavailable(f"SPICE was asked for (spice=True) but cannot run here: {spice_reason}")
        self.eval, self.imgToEval, self.unavailable = {}, {}, {}
        meteor = cast(Meteor, get("meteor"))
        meteor_runs = meteor.unavailable_reason() is None  # (otherwise its scoring below says why)
        if meteor_runs:
            meteor.start()  # the whole paraphrase table loading while the text is tokenised, if it must
        self._say("tokenization...")
        shared_corpus.get(rows)  # tokenised once here; every metric below reads the same corpus
        if meteor_runs:
            meteor.start(rows)  # otherwise on these rows' cut of the table, before Python takes the cores
        self._say("setting up scorers...")
        left_out = self.spice is False or spice_reason is not None
        scorers = [entry for entry in SCORERS if entry[0] != "SPICE" or not left_out]
        with ThreadPoolExecutor(max_workers=len(IN_JAVA)) as pool:
            # The JVMs of METEOR and SPICE work while Python computes the others (their threads wait
            # on pipes); printed in pycocoevalcap's order, each as it is ready.
            pending = {method: pool.submit(_scored, slugs, rows) for method, slugs, _ in scorers if method in IN_JAVA}
            computed = {method: _scored(slugs, rows) for method, slugs, _ in scorers if method not in IN_JAVA}
            for method, _, keys in scorers:
                self._say(f"computing {method} score...")
                results = pending[method].result() if method in pending else computed[method]
                self._record(method, keys, results, ids)
        if left_out:
            self._left_out("SPICE", spice_reason)
        self.evalImgs = list(self.imgToEval.values())

    def _record(self, method: str, keys: Sequence[str], results: list[MetricResult], ids: list) -> None:
        """A method's numbers into `eval` and `imgToEval`, printed as pycocoevalcap prints them."""
        if method == "Bleu":
            self._say_bleu_totals(results[0].statistics or [])
        for key, (corpus, per_image) in zip(keys, _numbers(method, results, ids), strict=True):
            self.eval[key] = corpus
            for image_id, value in zip(ids, per_image, strict=True):
                self.imgToEval.setdefault(image_id, {"image_id": image_id})[key] = value
            self._say(f"{key}: {corpus:0.3f}")

    def _rows(self, ids: list) -> list[CaptionRow]:
        """One row per image (its position as the row id: ids of any type), every input checked."""
        for image_id, captioned in self.cocoRes.imgToAnns.items():
            if captioned and not self.coco.imgToAnns.get(image_id):
                raise ValueError(
                    f"image {image_id!r} is in the results but has no reference caption"
                    + _type_hint(image_id, self.coco.imgToAnns)
                )
        if not ids:
            raise ValueError("no image to evaluate: params['image_id'] is empty")
        rows = []
        for position, image_id in enumerate(ids):
            references = _captions(self.coco, image_id, "reference")
            if not references:
                raise ValueError(
                    f"image {image_id!r}: no reference caption" + _type_hint(image_id, self.coco.imgToAnns)
                )
            candidates = _captions(self.cocoRes, image_id, "caption")
            if len(candidates) != 1:
                raise ValueError(
                    _candidate_problem(image_id, len(candidates)) + _type_hint(image_id, self.cocoRes.imgToAnns)
                )
            rows.append(CaptionRow(str(position), candidates[0], tuple(references)))
        return rows

    def _say_bleu_totals(self, statistics: Sequence[Sequence[int]]) -> None:
        """The corpus counts and length ratio pycocoevalcap's BLEU prints (rows of
        [testlen, reflen, correct 1..4, guess 1..4], capbench_eval.metrics.ngram.bleu.flat_stats)."""
        if not self.verbose:
            return
        sums = [int(sum(column)) for column in zip(*statistics, strict=True)]
        print({"testlen": sums[0], "reflen": sums[1], "guess": sums[6:10], "correct": sums[2:6]})
        print("ratio:", (sums[0] + TINY) / (sums[1] + SMALL))

    def _left_out(self, method: str, reason: str | None) -> None:
        if reason is None:  # spice=False: asked for, no notice
            return
        self.unavailable[method] = reason
        notice = f"{method} not computed: {reason}. The other metrics are computed (spice=False skips it without this notice)."
        if self.verbose:
            print(notice)
        else:
            warnings.warn(notice, RuntimeWarning, stacklevel=3)

    def _say(self, text: str) -> None:
        if self.verbose:
            print(text)


def _scored(slugs: Sequence[str], rows: list[CaptionRow]) -> list[MetricResult]:
    return [get(slug).score(rows) for slug in slugs]


def _numbers(method: str, results: list[MetricResult], ids: list) -> list[tuple[float, list]]:
    """(corpus number, per-image values) of each of a method's keys."""
    if method in CORPUS_STATISTIC:
        return [(float(result.corpus), list(result.scores)) for result in results]  # type: ignore[arg-type]
    if method == "SPICE":
        return [_spice(results[0], ids)]
    return [(float(np.mean(np.array(result.scores))), list(result.scores)) for result in results]


def _captions(source: CocoLike, image_id: object, what: str) -> list[str]:
    texts = []
    for number, annotation in enumerate(source.imgToAnns.get(image_id) or [], 1):
        if not isinstance(annotation, Mapping) or "caption" not in annotation:
            raise ValueError(f"image {image_id!r}: {what} {number} is not an object with a 'caption'")
        caption = annotation["caption"]
        if not isinstance(caption, str):
            raise ValueError(
                f"image {image_id!r}: {what} {number} is not a caption string (a {type(caption).__name__})"
            )
        texts.append(caption)
    return texts


def _candidate_problem(image_id: object, count: int) -> str:
    if count == 0:
        return (
            f"image {image_id!r} has references but no caption in the results (to score only the results' "
            "images, set params['image_id'] = cocoRes.getImgIds() before evaluate())"
        )
    return f"image {image_id!r}: {count} captions in the results; COCOEvalCap scores exactly one per image"


def _type_hint(image_id: object, keys: Mapping) -> str:
    """Where the other side names the image with the same digits in another type (1 and "1")."""
    other = str(image_id) if isinstance(image_id, int) else image_id
    if isinstance(image_id, str) and image_id.strip().lstrip("-").isdigit():
        other = int(image_id)
    if other is not image_id and keys.get(other):
        return f" (the other side names it {other!r}: an image id's type must be the same in both)"
    return ""


def _spice(result: MetricResult, ids: list) -> tuple[float, list]:
    """The mean SPICE (pycocoevalcap's: numpy's mean in ascending image order, NaN as soon as one
    image has none) and each image's F-scores per category."""
    per_image = [{category: {"f": value} for category, value in details.items()} for details in result.details or []]
    try:
        order = sorted(range(len(ids)), key=lambda position: ids[position])
    except TypeError:  # ids of mixed types: pycocoevalcap cannot sort them either
        order = list(range(len(ids)))
    return float(np.mean(np.array([result.scores[position] for position in order]))), per_image
