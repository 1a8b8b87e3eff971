"""BERTScore, Polos and the CLIP family's speed on full-size random models, in one run:

- BERTScore (roberta-large, layer 17): ours against bert-score's BERTScorer on the same folder, and
  against a naive loop that embeds each (candidate, reference) pair on its own; F1 agreement printed.
- Polos (SimCSE-RoBERTa-base + CLIP ViT-B/32 + the head): batched against one row at a time.
- CLIP-S, RefCLIP-S, PAC-S, RefPAC-S together on one submission, nothing seen before (a fresh
  feature cache): CLIP-S and RefCLIP-S share image and text features, PAC-S and RefPAC-S theirs
  (other weights), all four the tokens.

    python -m bench.text [--captions 5000] [--references 5] [--images 1000] [--naive 200]

Target (one H100): BERTScore ≥ 2× bert-score.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import fullsize
from bench.vision import timed  # GPU-synchronised seconds of one call
from capbench_eval.metrics import CaptionRow, get

SUBJECTS = [
    "a dog",
    "two children",
    "a red bus",
    "an old man",
    "a cat",
    "a woman",
    "a bike",
    "a small boat",
    "three people",
    "a brown horse",
    "a young girl",
    "a train",
]
ACTIONS = ["runs", "sits", "stands", "waits", "plays", "rests", "jumps", "walks slowly"]
PLACES = [
    "on the grass",
    "in the city",
    "near a lake",
    "on a sofa",
    "under a tree",
    "at the beach",
    "beside a wooden fence",
    "in front of a large building",
]


def sentence(rng: np.random.Generator) -> str:
    return " ".join([rng.choice(SUBJECTS), rng.choice(ACTIONS), rng.choice(PLACES)]) + f" {rng.integers(1000)}"


def peak_memory() -> str:
    import torch

    if not torch.cuda.is_available():
        return "n/a"
    peak = torch.cuda.max_memory_allocated() / 2**30
    torch.cuda.reset_peak_memory_stats()
    return f"{peak:.2f} GiB"


def bertscore(rows: list[CaptionRow], store: Path, naive_count: int) -> None:
    import torch

    folder = store / "hf" / "roberta-large"
    fullsize.roberta(folder, fullsize.ROBERTA_LARGE)
    metric = get("bertscore")
    metric.embedder._load()
    peak_memory()
    ours = []
    seconds = timed(lambda: ours.append(metric.score(rows)))
    memory = peak_memory()
    print(f"BERTScore ours: {seconds:6.2f} s, {len(rows) / seconds:7.1f} captions/s, GPU peak {memory}")
    try:
        import bert_score.scorer
        from bert_score import BERTScorer
    except ImportError:
        print("  bert-score: not installed, skipped")
    else:
        from transformers import AutoTokenizer

        # Under transformers 5 the `add_prefix_space=True` bert-score passes to `encode` is ignored; the
        # option must be given when the tokenizer is built (as ours is), so the oracle gets the same.
        bert_score.scorer.get_tokenizer = lambda model_type, use_fast=False: AutoTokenizer.from_pretrained(
            model_type, add_prefix_space=True
        )
        scorer = BERTScorer(
            model_type=str(folder),
            num_layers=17,
            idf=False,
            batch_size=64,
            device="cuda" if torch.cuda.is_available() else "cpu",
        )
        found = []
        theirs = timed(
            lambda: found.append(scorer.score([r.candidate for r in rows], [list(r.references) for r in rows]))
        )
        gap = float(np.max(np.abs(found[0][2].numpy() - np.asarray(ours[0].scores))))
        print(
            f"  bert-score BERTScorer: {theirs:6.2f} s: ours is {theirs / seconds:4.1f}× faster "
            f"(largest F1 difference {gap:.2e})"
        )
    embedder = metric.embedder
    texts = list(dict.fromkeys([r.candidate for r in rows] + [ref for r in rows for ref in r.references]))
    print(f"  of which tokenising the {len(texts):,} distinct texts: {timed(lambda: embedder.token_ids(texts)):5.2f} s")
    half_precision(rows, ours[0].scores, seconds)
    sample = rows[:naive_count]

    def naive():
        for row in sample:
            for reference in row.references:
                embedder.embed([row.candidate])
                embedder.embed([reference])

    one = timed(naive) * len(rows) / len(sample)
    print(
        f"  naive loop (one sentence per forward pass): {one:7.1f} s extrapolated from {len(sample)}: "
        f"ours is {one / seconds:5.1f}× faster"
    )


def scored_with(embedder, rows: list[CaptionRow]):
    """BERTScore's result with another token embedder in place of the metric's own."""
    from capbench_eval.metrics.embedding.bertscore import BertScore

    class WithEmbedder(BertScore):
        @property
        def embedder(self):
            return embedder

    return WithEmbedder().score(rows)


def half_precision(rows: list[CaptionRow], fp32_scores: list[float], fp32_seconds: float) -> None:
    """What bigger batches, bf16 or fp16 weights would change: time and the F1 difference to fp32."""
    import torch

    from capbench_eval.metrics.embedding.bertscore import LAYER, MODEL, TokenEmbedder

    if not torch.cuda.is_available():
        return
    for precision, batch in (("fp32", 64), ("bf16", 256), ("fp16", 256)):
        embedder = TokenEmbedder(MODEL, LAYER, batch=batch, precision=precision)
        embedder._load()
        found = []
        seconds = timed(lambda e=embedder, out=found: out.append(scored_with(e, rows)))
        gap = np.abs(np.asarray(found[0].scores) - np.asarray(fp32_scores))
        print(
            f"  {precision} weights, batches of {batch}: {seconds:6.2f} s (×{fp32_seconds / seconds:.2f} of fp32); F1 difference to fp32 "
            f"largest {gap.max():.2e}, mean {gap.mean():.2e}"
        )
        del embedder
        torch.cuda.empty_cache()


def polos(rows: list[CaptionRow], store: Path, naive_count: int) -> None:
    fullsize.polos(store)
    metric = get("polos")
    metric.model._load()
    peak_memory()
    seconds = timed(lambda: metric.score(rows))
    memory = peak_memory()
    sample = rows[:naive_count]
    one = timed(lambda: [metric.score([row]) for row in sample]) * len(rows) / len(sample)
    print(
        f"Polos ours: {seconds:6.2f} s, {len(rows) / seconds:7.1f} captions/s, GPU peak {memory}; "
        f"one row per call {one:7.1f} s (extrapolated from {len(sample)}): ours is {one / seconds:5.1f}× faster"
    )


def clip_family(rows: list[CaptionRow], store: Path) -> None:
    from capbench_eval.backbones import clip

    fullsize.open_clip_weights(store, "ViT-B-32-quickgelu")
    fullsize.pac_checkpoint(store)
    clip.clip_encoder.cache_clear()
    clip.token_memo.cache_clear()  # cold: nothing tokenised or encoded before (Polos ran on the same texts)
    # Nor any image: Polos's CLIP is CLIP-S's encoder, and it has just cached these images' features.
    os.environ["CAPBENCH_FEATURE_DIR"] = str(store.parent / f"features-clip-{time.time_ns()}")
    metrics = [get(slug) for slug in ("clip_s", "ref_clip_s", "pac_s", "ref_pac_s")]
    for metric in metrics:
        metric.encoder._load()
    peak_memory()
    spent = {metric.slug: timed(lambda m=metric: m.score(rows)) for metric in metrics}
    memory = peak_memory()
    again = timed(lambda: [m.score(rows) for m in metrics])
    parts = ", ".join(f"{slug} {seconds:.2f} s" for slug, seconds in spent.items())
    print(
        f"CLIP-S + RefCLIP-S + PAC-S + RefPAC-S, cold (images, texts): {sum(spent.values()):6.2f} s ({parts}); "
        f"the same submission again: {again:5.2f} s; GPU peak {memory}"
    )
    rng = np.random.default_rng(1)
    fresh = [CaptionRow(row.id, sentence(rng), row.references, row.media) for row in rows]
    new = timed(lambda: [m.score(fresh) for m in metrics])
    print(f"  a new submission on the same dataset (its images and references seen): {new:5.2f} s")
    import open_clip

    tokenizer = open_clip.get_tokenizer("ViT-B-32-quickgelu")
    texts = list(dict.fromkeys([r.candidate for r in rows] + [ref for r in rows for ref in r.references]))
    print(
        f"  tokenising those {len(texts):,} texts once with open_clip's tokenizer: {timed(lambda: tokenizer(texts)):5.2f} s"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captions", type=int, default=5000)
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--naive", type=int, default=200, help="captions timed one at a time (extrapolated)")
    parser.add_argument("--only", nargs="*", default=["bertscore", "polos", "clip"])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "capbench-bench-text")
    args = parser.parse_args()
    import torch

    store = args.work / "models"
    os.environ["CAPBENCH_MODEL_DIR"] = str(store)
    os.environ["CAPBENCH_FEATURE_DIR"] = str(args.work / f"features-{time.time_ns()}")
    from embedding import make_images

    images = make_images(args.work / "images", args.images)
    rng = np.random.default_rng(0)
    rows = [
        CaptionRow(str(i), sentence(rng), tuple(sentence(rng) for _ in range(args.references)), images[i % len(images)])
        for i in range(args.captions)
    ]
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    print(f"device {device}; {len(rows):,} captions × {args.references} references over {len(images):,} images")
    if "bertscore" in args.only:
        bertscore(rows, store, args.naive)
    if "polos" in args.only:
        polos(rows, store, args.naive)
    if "clip" in args.only:
        clip_family(rows, store)
    return 0


if __name__ == "__main__":
    sys.exit(main())
