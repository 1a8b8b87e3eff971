"""BLEU-1..4 + ROUGE-L + CIDEr-D on Flickr8k-Expert (16,992 rows), PTB tokenisation included:
ours against pycocoevalcap on the same rows in the same run (target: at least 5x faster); METEOR
on its own (target: at least 2x faster). pycocoevalcap starts a JVM (and loads the 60 MB paraphrase
table) for every evaluation; our worker keeps one JVM, so ours is timed twice: cold (first call,
JVM start included) and warm (the steady state of a worker), and the target is judged warm.
Run from the repository root (`-m` puts it first on the import path, so the test data's loader,
tests/judgment_data.py, imports as `tests.judgment_data`):

    python -m bench.ngram
"""

from __future__ import annotations

import contextlib
import io
import sys
import time

from pycocoevalcap.bleu.bleu import Bleu as OracleBleu
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.meteor.meteor import Meteor as OracleMeteor
from pycocoevalcap.rouge.rouge import Rouge as OracleRouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from evaluation.metrics import CaptionRow, get
from tests.judgment_data import judgment_data  # the Flickr8k files, decompressed once

DATA = judgment_data() / "flickr8k"
TARGET = 5.0
METEOR_TARGET = 2.0


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
    return 0 if ratio >= TARGET and meteor_ratio >= METEOR_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
