"""The local vision-language judges' speed (VisCE², FLEUR) on a full-size random LLaVA-1.5 (CLIP
ViT-L/14-336 + Llama-2 7B or 13B, fp16), through the judges' own backend (`LocalVLM`: the model
store, the processor's chat template, batched `generate` with per-token log-probabilities).

Random weights never choose to stop, so each step generates the number of tokens a trained model
writes there: VisCE²'s visual context (`--context-tokens`, once per image), VisCE²'s rating and
FLEUR's score (`--rating-tokens`, once per caption). Prints tokens/s and captions/s per step, batched
against one request at a time, the GPU memory peak, and a 5,000-caption estimate.

    python -m bench.judge_local [--size 7b|13b] [--images 32] [--batches 1 8 32]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from bench import fullsize
from bench.vision import timed  # GPU-synchronised seconds of one call
from capbench_eval.backbones.catalogue import HfModel
from capbench_eval.metrics.judges.backends import JudgeFailed, JudgeRequest, LocalVLM
from capbench_eval.metrics.judges.fleur import Fleur
from capbench_eval.metrics.judges.prompts import fill, prompt_text
from capbench_eval.metrics.judges.visce2 import CONTEXT_PROMPT, RATING_PROMPT, VisCE2

NAMES = {"7b": "llava-hf/llava-1.5-7b-hf", "13b": "llava-hf/llava-1.5-13b-hf", "tiny": "llava-hf/llava-1.5-7b-hf"}


def photos(folder: Path, count: int) -> list[bytes]:
    import io

    from PIL import Image

    rng = np.random.default_rng(0)
    found = []
    for _ in range(count):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (375, 500, 3), dtype=np.uint8)).save(buffer, "JPEG", quality=90)
        found.append(buffer.getvalue())
    return found


def step(backend: LocalVLM, name: str, requests: list[JudgeRequest], params, batches: list[int]) -> dict[int, float]:
    """Seconds per request of one step at each batch size (the smallest batch size on fewer requests)."""
    import torch

    per_request = {}
    prompt = backend.prompt_tokens(requests[0])
    for batch in batches:
        backend.batch = batch
        part = requests if batch > 1 else requests[: max(2, len(requests) // 8)]
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        replies: list = []
        seconds = timed(lambda p=part, out=replies: out.extend(backend._complete(p, params)))
        failed = [r for r in replies if isinstance(r, JudgeFailed)]
        if failed:
            print(f"  {name}, batch {batch}: {len(failed)} failed: {failed[0]}")
            continue
        tokens = sum(r.completion_tokens for r in replies)
        peak = f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if torch.cuda.is_available() else "n/a"
        per_request[batch] = seconds / len(part)
        print(
            f"  {name}, batch {batch:3d}: {len(part) / seconds:7.2f} requests/s, {tokens / seconds:8.1f} new tokens/s "
            f"({tokens / len(part):.0f} per request, prompt {prompt} tokens), GPU peak {peak}"
        )
    return per_request


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(NAMES), default="7b")
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--captions-per-image", type=int, default=5, help="5,000 captions over 1,000 images: 5")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--context-tokens", type=int, default=250)
    parser.add_argument("--rating-tokens", type=int, default=8)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "capbench-bench-judge")
    args = parser.parse_args()
    import os

    import torch

    store = args.work / "models"
    os.environ["CAPBENCH_MODEL_DIR"] = str(store)
    started = time.perf_counter()
    fullsize.llava(store / "hf" / NAMES[args.size], args.size)
    print(f"random LLaVA-1.5-{args.size} written in {time.perf_counter() - started:.0f} s")
    backend = LocalVLM(HfModel(NAMES[args.size], task="image-text-to-text"))
    load = timed(backend._load)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    print(
        f"device {device}; LLaVA-1.5-{args.size} fp16 loaded through the store in {load:.1f} s; "
        f"attention {backend._loaded.config.text_config._attn_implementation}"
    )

    images = photos(args.work, args.images)
    rng = np.random.default_rng(1)
    words = prompt_text(RATING_PROMPT).split()
    context_text = " ".join(rng.choice(words, size=int(args.context_tokens * 0.75)))
    captions = [f"a photo of a dog number {i} running on the grass near a lake" for i in range(len(images))]
    visce2, fleur = VisCE2.params, Fleur.params
    contexts = [JudgeRequest(prompt_text(CONTEXT_PROMPT), image) for image in images]
    ratings = [
        JudgeRequest(fill(RATING_PROMPT, candidate=c, context=context_text), image)
        for c, image in zip(captions, images, strict=True)
    ]
    fleurs = [
        JudgeRequest(fill("fleur/fleur.txt", candidate=c), image, watch=tuple("0123456789"))
        for c, image in zip(captions, images, strict=True)
    ]
    print(f"VisCE² step 1 (visual context, {args.context_tokens} new tokens, once per image):")
    context = step(backend, "context", contexts, replace(visce2, max_tokens=args.context_tokens), args.batches)
    print(f"VisCE² step 2 (rating, {args.rating_tokens} new tokens, per caption):")
    rating = step(backend, "rating", ratings, replace(visce2, max_tokens=args.rating_tokens), args.batches)
    print(f"FLEUR ({args.rating_tokens} new tokens, digit log-probabilities watched, per caption):")
    fleur_times = step(backend, "fleur", fleurs, replace(fleur, max_tokens=args.rating_tokens), args.batches)
    best = max(args.batches)
    per = args.captions_per_image
    if best in context and best in rating and best in fleur_times and 1 in rating:
        visce2_caption = context[best] / per + rating[best]
        naive_caption = context[1] / per + rating[1]
        print(
            f"VisCE² per caption ({per} captions per image): {visce2_caption:.3f} s batched ({best}), "
            f"{naive_caption:.3f} s one at a time (×{naive_caption / visce2_caption:.1f}); 5,000 captions ≈ "
            f"{5000 * visce2_caption / 60:.1f} min"
        )
        print(
            f"FLEUR per caption: {fleur_times[best]:.3f} s batched, {fleur_times[1]:.3f} s one at a time "
            f"(×{fleur_times[1] / fleur_times[best]:.1f}); 5,000 captions ≈ {5000 * fleur_times[best] / 60:.1f} min"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
