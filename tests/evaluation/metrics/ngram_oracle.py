"""pycocoevalcap's BLEU-1..4, METEOR, ROUGE-L and CIDEr-D for every judgment row of Flickr8k files,
written as JSON: {format: {"rows": count, "scores": {slug: [per-row scores in row order, corpus
score]}}}.

test_ngram_oracle.py runs it in its own process while it computes ours (the oracle alone takes
minutes on Flickr8k-CF), then compares the two. One METEOR JVM (its whole paraphrase table loaded
once) scores every file.

    python -m tests.evaluation.metrics.ngram_oracle FLICKR8K_FOLDER OUT.json FORMAT[:EVERY] ...

EVERY (default 1): only every EVERY-th judgment row, from the first.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

from pycocoevalcap.bleu.bleu import Bleu as OracleBleu
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.meteor.meteor import Meteor as OracleMeteor
from pycocoevalcap.rouge.rouge import Rouge as OracleRouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from capbench_eval.metrics import CaptionRow
from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle


def flickr8k_rows(source_format: str, folder: Path, every: int = 1) -> list[CaptionRow]:
    """One row per judgment, references of the judged item: the CLIPScore/PAC-S protocol; with
    `every`, only every every-th row from the first (one corpus on both sides all the same)."""
    return judgment_rows(read_bundle(source_format, folder)).rows[::every]


def oracle(rows: list[CaptionRow], meteor: OracleMeteor) -> dict[str, tuple[list[float], float]]:
    tokenizer = OracleTokenizer()
    gts = tokenizer.tokenize({row.id: [{"caption": ref} for ref in row.references] for row in rows})
    res = tokenizer.tokenize({row.id: [{"caption": row.candidate}] for row in rows})
    with contextlib.redirect_stdout(io.StringIO()):
        bleu_corpus, bleu_rows = OracleBleu(4).compute_score(gts, res)
    rouge_corpus, rouge_rows = OracleRouge().compute_score(gts, res)
    cider_corpus, cider_rows = OracleCider().compute_score(gts, res)
    meteor_corpus, meteor_rows = meteor.compute_score(gts, res)
    order = {key: index for index, key in enumerate(gts)}
    positions = [order[row.id] for row in rows]
    scores = {f"bleu_{k + 1}": ([bleu_rows[k][p] for p in positions], bleu_corpus[k]) for k in range(4)}
    scores["rouge_l"] = ([rouge_rows[p] for p in positions], rouge_corpus)
    scores["cider_d"] = ([cider_rows[p] for p in positions], cider_corpus)
    scores["meteor"] = ([meteor_rows[p] for p in positions], meteor_corpus)
    return {slug: ([float(v) for v in values], float(corpus)) for slug, (values, corpus) in scores.items()}


def main(argv: list[str]) -> int:
    folder, out, *sets = argv
    meteor = OracleMeteor()
    written = {}
    for spec in sets:
        source_format, _, every = spec.partition(":")
        rows = flickr8k_rows(source_format, Path(folder), int(every or 1))
        with contextlib.redirect_stdout(sys.stderr):  # the PTB tokenizer prints its counts
            written[source_format] = {"rows": len(rows), "scores": oracle(rows, meteor)}
    partial = Path(out + ".partial")
    partial.write_text(json.dumps(written))
    partial.rename(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
