"""BLEU-1..4 + ROUGE-L + CIDEr-D on Flickr8k-Expert (16,992 rows), PTB tokenisation included:
ours against pycocoevalcap on the same rows in the same run (target: at least 5x faster); METEOR
on its own (target: at least 2x faster). pycocoevalcap starts a JVM (and loads the 60 MB paraphrase
table) for every evaluation; our worker keeps one JVM, so ours is timed twice: cold (first call,
JVM start included) and warm (the steady state of a worker), and the target is judged warm.

Then the pycocoevalcap drop-in: `capbench_eval.coco.COCOEvalCap(coco, res).evaluate()` against
pycocoevalcap's `COCOEvalCap(coco, res).evaluate()` on the same pycocotools objects, one image per
distinct (candidate, references) row of Flickr8k-Expert (5,664, a Karpathy test split's size):
BLEU-1..4, METEOR, ROUGE-L and CIDEr-D with PTB tokenisation, SPICE left out on both sides
(pycocoevalcap's own evaluate() with its Spice scorer replaced by a no-op,
tests/evaluation/coco_oracle.py; ours with spice=False). Building the objects is not timed. Each
run is a fresh process (nothing cached from the runs above): pycocoevalcap; ours on a machine's
first run (no paraphrase index: METEOR's JVM loads the whole table); ours cold, what one script's
evaluate() costs once the index is built (METEOR's JVM on these rows' cut of the table, docs/metrics.md
§2), on which the target (at least 5x) is judged; ours warm, its JVMs started first
(`get("meteor").warm()`, on made-up text), as in a loop evaluating checkpoint after checkpoint.
METEOR runs the same jar doing the same alignments on both sides (ours in a thread while Python
computes the others): the jar alone is timed too, in a fresh JVM on the same rows with the whole
table and with the cut, and the ceilings they set are printed. Measured here (2 cores): pycocoevalcap
22.1 s; ours first run 15.1 s, cold 10.6 s (2.1x), warm 6.6 s; the jar alone 11.7 s whole (1.9x) and
6.4 s on the cut (3.4x), most of it aligning (its JIT and GC take the second core).

Run from the repository root (`-m` puts it first on the import path, so the test data's loader,
tests/judgment_data.py, imports as `tests.judgment_data`):

    python -m bench.ngram
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

from pycocoevalcap.bleu.bleu import Bleu as OracleBleu
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.meteor.meteor import Meteor as OracleMeteor
from pycocoevalcap.rouge.rouge import Rouge as OracleRouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from capbench_eval.coco import COCOEvalCap
from capbench_eval.metrics import CaptionRow, get
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.java import coco_resource, java_executable
from capbench_eval.metrics.ngram.meteor import JAR, batch_tokens
from capbench_eval.metrics.ngram.paraphrases import build_index, paraphrases_for
from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from tests.evaluation.coco_oracle import coco_objects, pycocoevalcap_evaluate
from tests.judgment_data import judgment_data  # the Flickr8k files, decompressed once

DATA = judgment_data() / "flickr8k"
TARGET = 5.0
METEOR_TARGET = 2.0
DROP_IN_TARGET = 5.0


def expert_rows() -> list[CaptionRow]:
    return judgment_rows(read_bundle("flickr8k-expert", DATA)).rows


def reference_run(rows: list[CaptionRow]) -> dict[str, float]:
    timings = {}
    started = time.perf_counter()
    tokenizer = OracleTokenizer()
    gts = tokenizer.tokenize({row.id: [{"caption": ref} for ref in row.references] for row in rows})
    res = tokenizer.tokenize({row.id: [{"caption": row.candidate}] for row in rows})
    timings["tokenize"] = time.perf_counter() - started
    for name, scorer in (("bleu", OracleBleu(4)), ("rouge_l", OracleRouge()), ("cider_d", OracleCider())):
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            scorer.compute_score(gts, res)
        timings[name] = time.perf_counter() - started
    started = time.perf_counter()
    OracleMeteor().compute_score(gts, res)
    timings["meteor"] = time.perf_counter() - started
    return timings


def our_run(rows: list[CaptionRow]) -> dict[str, float]:
    timings = {}
    for slug in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d"):
        started = time.perf_counter()
        get(slug).score(rows)
        timings[slug] = time.perf_counter() - started
    for name in ("meteor_cold", "meteor"):
        started = time.perf_counter()
        get("meteor").score(rows)
        timings[name] = time.perf_counter() - started
    return timings


def drop_in_objects():
    """pycocotools' ground truth and results: one image per distinct (candidate, references) row."""
    distinct = dict.fromkeys((row.candidate, row.references) for row in expert_rows())
    references = {image_id: list(refs) for image_id, (_, refs) in enumerate(distinct, 1)}
    candidates = {image_id: candidate for image_id, (candidate, _) in enumerate(distinct, 1)}
    return coco_objects(references, candidates)


# Each side's fresh process: where it finds METEOR's paraphrase index. "first run": nowhere it could
# build one (a path under a file), so the JVM loads the whole table, as on a machine's first run.
NO_INDEX = "/dev/null/no-index"
SIDES = {"pycocoevalcap": None, "first run": NO_INDEX, "cold": None, "warm": None}


def drop_in_run(side: str, index_dir: str | None) -> tuple[float, int, dict]:
    """Seconds of one evaluate() (`side`: pycocoevalcap, first run, cold, warm), the images and
    `.eval`; run in a fresh process."""
    if index_dir:
        os.environ["CAPBENCH_METEOR_INDEX_DIR"] = index_dir
    coco, results = drop_in_objects()
    if side == "warm":
        get("meteor").warm()  # the tokenizer's JVM and METEOR's (the whole table), warmed on made-up text
    started = time.perf_counter()
    if side == "pycocoevalcap":
        evaluator, _ = pycocoevalcap_evaluate(coco, results)
    else:
        evaluator = COCOEvalCap(coco, results, spice=False, verbose=False)
        evaluator.evaluate()
    return time.perf_counter() - started, len(evaluator.imgToEval), {k: float(v) for k, v in evaluator.eval.items()}


def index_build() -> float:
    """Seconds to build the paraphrase table's index, once per machine (into a scratch folder)."""
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["CAPBENCH_METEOR_INDEX_DIR"] = scratch
        started = time.perf_counter()
        build_index()
        return time.perf_counter() - started


def meteor_jar_alone(cut: bool) -> float:
    """Seconds of the METEOR jar alone in a fresh JVM (`-stdio`, as both sides run it) scoring the
    drop-in's rows, tokenised, with the whole paraphrase table or these rows' cut of it (written
    beforehand, not timed): the floor under any evaluate() that computes METEOR with it."""
    coco, results = drop_in_objects()
    evaluator = COCOEvalCap(coco, results, spice=False, verbose=False)
    corpus = shared_corpus.get(evaluator._rows(list(evaluator.params["image_id"])))
    lines = "".join(
        " ||| ".join(("SCORE", " ||| ".join(references), candidate)) + "\n"
        for candidate, references in zip(corpus.candidates, corpus.references, strict=True)
    )
    jar = coco_resource(JAR)
    command = [java_executable(), "-jar", "-Xmx2G", jar.name, "-", "-", "-stdio", "-l", "en", "-norm"]
    table = paraphrases_for(batch_tokens(corpus.candidates, corpus.references)) if cut else None
    try:
        started = time.perf_counter()
        subprocess.run(
            command + (["-a", str(table)] if table else []),
            cwd=jar.parent,
            input=lines.encode(),
            capture_output=True,
            check=True,
        )
        return time.perf_counter() - started
    finally:
        if table:
            shutil.rmtree(table.parent)


def drop_in_report() -> bool:
    build_index()  # this machine's index, for the cold and warm sides (built once, not timed)
    timings = {}
    for side, index_dir in SIDES.items():
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
            timings[side] = fresh.submit(drop_in_run, side, index_dir).result()
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as fresh:
        building = fresh.submit(index_build).result()
    (reference, images, expected), (first, _, _), (cold, _, ours), (warm, _, _) = timings.values()
    whole, cut = meteor_jar_alone(cut=False), meteor_jar_alone(cut=True)
    worst = max(abs(ours[key] - expected[key]) for key in expected)
    print(f"drop-in, {images:,} images (Flickr8k-Expert's distinct rows), BLEU/METEOR/ROUGE-L/CIDEr-D, no SPICE:")
    print(
        f"  pycocoevalcap COCOEvalCap.evaluate() {reference:.2f} s; capbench_eval.coco.COCOEvalCap.evaluate(): "
        f"first run on a machine (whole paraphrase table) {first:.2f} s ({reference / first:.1f}x), "
        f"cold {cold:.2f} s ({reference / cold:.1f}x), warm {warm:.2f} s ({reference / warm:.1f}x); "
        f"largest .eval difference {worst:.1e}; the paraphrase index, built once per machine: {building:.1f} s"
    )
    print(
        f"  the METEOR jar alone on these rows, fresh JVM: {whole:.2f} s with the whole table (so no evaluate() "
        f"loading it can be more than {reference / whole:.1f}x faster here), {cut:.2f} s with their cut "
        f"({reference / cut:.1f}x)"
    )
    met = reference / cold >= DROP_IN_TARGET
    print(
        f"  drop-in speed-up (cold): {reference / cold:.1f}x (target {DROP_IN_TARGET:.0f}x: {'met' if met else 'NOT met'})"
    )
    return met


def main() -> int:
    rows = expert_rows()
    reference = reference_run(rows)
    ours = our_run(rows)  # the first metric pays for tokenisation (one JVM call, distinct texts)
    reference_meteor, our_meteor, our_cold = reference.pop("meteor"), ours.pop("meteor"), ours.pop("meteor_cold")
    reference_total, our_total = sum(reference.values()), sum(ours.values())
    print(f"rows: {len(rows):,} (Flickr8k-Expert)")
    print(
        "pycocoevalcap: "
        + ", ".join(f"{k} {v:.2f} s" for k, v in reference.items())
        + f"; total {reference_total:.2f} s"
    )
    print("capbench:      " + ", ".join(f"{k} {v:.2f} s" for k, v in ours.items()) + f"; total {our_total:.2f} s")
    ratio = reference_total / our_total
    print(f"speed-up: {ratio:.1f}x (target {TARGET:.0f}x: {'met' if ratio >= TARGET else 'NOT met'})")
    meteor_ratio = reference_meteor / our_meteor
    print(
        f"METEOR: pycocoevalcap {reference_meteor:.2f} s; capbench cold {our_cold:.2f} s "
        f"({reference_meteor / our_cold:.1f}x), warm {our_meteor:.2f} s, speed-up {meteor_ratio:.1f}x "
        f"(target {METEOR_TARGET:.0f}x: {'met' if meteor_ratio >= METEOR_TARGET else 'NOT met'})"
    )
    drop_in_met = drop_in_report()
    return 0 if ratio >= TARGET and meteor_ratio >= METEOR_TARGET and drop_in_met else 1


if __name__ == "__main__":
    sys.exit(main())
