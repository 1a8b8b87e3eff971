"""BLEU-1..4 + ROUGE-L + CIDEr-D on Flickr8k-Expert (16,992 rows), PTB tokenisation included:
ours against pycocoevalcap on the same rows in the same run (target: at least 5x faster).

    PYTHONPATH=platform:. python bench/ngram.py
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

from pycocoevalcap.bleu.bleu import Bleu as OracleBleu
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.rouge.rouge import Rouge as OracleRouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from catalog.importers.registry import read_bundle
from evaluation.metrics import CaptionRow, get

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "flickr8k"
TARGET = 5.0


def expert_rows() -> list[CaptionRow]:
    bundle = read_bundle("flickr8k-expert", DATA)
    references = {item.external_id: tuple(item.references) for item in bundle.items}
    texts = {caption.key: caption.text for caption in bundle.captions}
    return [CaptionRow(str(i), texts[j.caption], references[j.caption.item]) for i, j in enumerate(bundle.judgments)]


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
    return timings


def our_run(rows: list[CaptionRow]) -> dict[str, float]:
    timings = {}
    for slug in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d"):
        started = time.perf_counter()
        get(slug).score(rows)
        timings[slug] = time.perf_counter() - started
    return timings


def main() -> int:
    rows = expert_rows()
    reference = reference_run(rows)
    ours = our_run(rows)  # the first metric pays for tokenisation (one JVM call, distinct texts)
    reference_total, our_total = sum(reference.values()), sum(ours.values())
    print(f"rows: {len(rows):,} (Flickr8k-Expert)")
    print("pycocoevalcap: " + ", ".join(f"{k} {v:.2f} s" for k, v in reference.items()) + f"; total {reference_total:.2f} s")
    print("capbench:      " + ", ".join(f"{k} {v:.2f} s" for k, v in ours.items()) + f"; total {our_total:.2f} s")
    ratio = reference_total / our_total
    print(f"speed-up: {ratio:.1f}x (target {TARGET:.0f}x: {'met' if ratio >= TARGET else 'NOT met'})")
    return 0 if ratio >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
