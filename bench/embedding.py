"""CLIP-S speed: our batched encoder (deduplicated texts, image feature cache) against a naive
one-caption-at-a-time loop and torchmetrics' CLIPScore on the same inputs, in one run. Full-size
architectures with random weights (speed does not depend on trained weights): ViT-B/32 and
ViT-L/14. Targets (on one H100): ≥ 10× the naive loop, ≥ 2× torchmetrics, and a 5,000-caption
submission with a warm image cache in under 10 s.

    python -m bench.embedding [--captions 5000] [--images 1000] [--architectures ViT-B-32-quickgelu ViT-L-14]

Needs open_clip (and torchmetrics + transformers for the third column; skipped with a note if absent).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from capbench_eval.backbones.clip import clip_encoder, token_memo
from capbench_eval.metrics import CaptionRow
from capbench_eval.metrics.embedding.clip_score import ClipScore


def make_store(root: Path, architecture: str) -> None:
    import open_clip
    import torch

    folder = root / "open_clip" / architecture
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "openai.pt").exists():
        torch.save(open_clip.create_model(architecture, pretrained=None).state_dict(), folder / "openai.pt")


def make_images(root: Path, count: int) -> list[str]:
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for index in range(count):
        path = root / f"{index:05d}.jpg"
        if not path.exists():
            Image.fromarray(rng.integers(0, 255, (375, 500, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(str(path))
    return paths


def naive_seconds(architecture: str, store: Path, rows: list[CaptionRow], device: str) -> float:
    """What a first implementation does: load, then per caption decode + encode image and text."""
    import open_clip
    import torch
    from PIL import Image

    model, _, preprocess = open_clip.create_model_and_transforms(
        architecture, pretrained=str(store / "open_clip" / architecture / "openai.pt"), device=device
    )
    tokenizer = open_clip.get_tokenizer(architecture)
    started = time.perf_counter()
    with torch.no_grad():
        for row in rows:
            image = model.encode_image(preprocess(Image.open(row.media).convert("RGB")).unsqueeze(0).to(device))
            text = model.encode_text(tokenizer(["A photo depicts " + row.candidate]).to(device))
            (2.5 * torch.clamp(torch.cosine_similarity(image, text), min=0)).item()
    return time.perf_counter() - started


def local_clip_processor(folder: Path) -> None:
    """A CLIPProcessor without the hub: open_clip's BPE vocabulary and merges (the OpenAI ones) written
    in the HF layout, with CLIP's resize/crop/normalise image processor."""
    import json

    from open_clip.tokenizer import SimpleTokenizer
    from transformers import CLIPImageProcessor, CLIPProcessor, CLIPTokenizer

    bpe = SimpleTokenizer()
    (folder / "vocab.json").write_text(json.dumps(bpe.encoder))
    merges = sorted(bpe.bpe_ranks, key=bpe.bpe_ranks.get)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(pair) for pair in merges) + "\n")
    bos, eos = bpe.decoder[bpe.sot_token_id], bpe.decoder[bpe.eot_token_id]
    tokenizer = CLIPTokenizer(
        str(folder / "vocab.json"),
        str(folder / "merges.txt"),
        bos_token=bos,
        eos_token=eos,
        pad_token=eos,
        unk_token=eos,
    )
    images = CLIPImageProcessor(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)


def torchmetrics_seconds(rows: list[CaptionRow], device: str, architecture: str) -> float | None:
    try:
        import torch
        from PIL import Image
        from torchmetrics.multimodal.clip_score import CLIPScore
        from transformers import CLIPConfig, CLIPModel, CLIPProcessor
    except ImportError:
        return None
    sizes = {
        "ViT-B-32-quickgelu": ("openai/clip-vit-base-patch32", 768, 12, 32, 512, 512),
        "ViT-L-14": ("openai/clip-vit-large-patch14", 1024, 24, 14, 768, 768),
    }
    if architecture not in sizes:
        return None
    _, width, layers, patch, text_width, projection = sizes[architecture]
    with tempfile.TemporaryDirectory() as folder:
        config = CLIPConfig(
            vision_config={
                "hidden_size": width,
                "num_hidden_layers": layers,
                "patch_size": patch,
                "intermediate_size": 4 * width,
                "num_attention_heads": width // 64,
            },
            text_config={
                "hidden_size": text_width,
                "intermediate_size": 4 * text_width,
                "num_attention_heads": text_width // 64,
            },
            projection_dim=projection,
        )
        CLIPModel(config).save_pretrained(folder)
        local_clip_processor(Path(folder))  # the OpenAI BPE vocabulary, from open_clip's copy (no hub here)

        class TensorFeatures(CLIPModel):
            """transformers 5 returns an output object where torchmetrics 1.9 expects the projected tensor."""

            def get_image_features(self, *args, **kwargs):
                out = super().get_image_features(*args, **kwargs)
                return out if isinstance(out, torch.Tensor) else out.pooler_output

            def get_text_features(self, *args, **kwargs):
                out = super().get_text_features(*args, **kwargs)
                return out if isinstance(out, torch.Tensor) else out.pooler_output

        metric = CLIPScore(
            model_name_or_path=lambda: (TensorFeatures.from_pretrained(folder), CLIPProcessor.from_pretrained(folder))
        ).to(device)
        started = time.perf_counter()
        for start in range(0, len(rows), 64):
            part = rows[start : start + 64]
            pixels = [torch.from_numpy(np.array(Image.open(r.media).convert("RGB"))).permute(2, 0, 1) for r in part]
            metric.update(pixels, ["A photo depicts " + r.candidate for r in part])
        metric.compute()
        return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=5000)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--naive", type=int, default=300, help="captions timed in the naive loop (extrapolated)")
    parser.add_argument("--architectures", nargs="+", default=["ViT-B-32-quickgelu", "ViT-L-14"])
    parser.add_argument(
        "--torchmetrics",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time torchmetrics' CLIPScore (minutes for ViT-L/14: it decodes every image per caption)",
    )
    args = parser.parse_args()
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    work = Path(tempfile.mkdtemp(prefix="capbench-bench-"))
    os.environ["CAPBENCH_MODEL_DIR"] = str(work / "models")
    os.environ["CAPBENCH_FEATURE_DIR"] = str(work / "features")
    images = make_images(work / "images", args.images)
    # Every caption distinct (as in a real submission), so text deduplication earns us nothing here.
    rows = [
        CaptionRow(str(i), f"a photo of object {i} next to thing {i % 13}", (), images[i % len(images)])
        for i in range(args.captions)
    ]
    print(f"device {device}; {args.captions:,} captions over {len(images):,} images (500×375 JPEG)")
    for architecture in args.architectures:
        make_store(work / "models", architecture)
        clip_encoder.cache_clear()
        token_memo.cache_clear()  # cold: no text tokenised before, whatever ran first
        metric = ClipScore()
        metric.backbone = type(metric.backbone)(architecture, "openai")
        metric.encoder._load()
        started = time.perf_counter()
        metric.score(rows)
        cold = time.perf_counter() - started
        # A new submission on the same images: image features from the cache, every caption new.
        fresh = [CaptionRow(row.id, f"another photo of thing {row.id}", (), row.media) for row in rows]
        started = time.perf_counter()
        metric.score(fresh)
        warm = time.perf_counter() - started
        decode_started = time.perf_counter()
        from PIL import Image

        for path in images[:200]:
            Image.open(path).convert("RGB")
        decode_one_thread = (time.perf_counter() - decode_started) / 200 * len(images)
        # Each figure is printed as soon as it is measured: a run cut short still reports what it had.
        print(
            f"{architecture}: ours cold {cold:6.2f} s ({len(images) / cold:7.1f} images/s, "
            f"{len(rows) / cold:7.1f} captions/s; decoding the images on one thread would take "
            f"{decode_one_thread:5.2f} s), new captions with a warm image cache {warm:5.2f} s",
            flush=True,
        )
        sample = rows[: args.naive]
        naive = naive_seconds(architecture, work / "models", sample, device) * len(rows) / len(sample)
        print(
            f"  naive loop {naive:7.1f} s (extrapolated from {len(sample)}): ours cold is {naive / cold:5.1f}× faster",
            flush=True,
        )
        tm = torchmetrics_seconds(rows, device, architecture) if args.torchmetrics else None
        if tm is None:
            print("  torchmetrics CLIPScore: skipped (--no-torchmetrics, or torchmetrics/transformers missing)")
        else:
            print(f"  torchmetrics CLIPScore {tm:6.2f} s: ours cold is {tm / cold:4.1f}× faster")
        if torch.cuda.is_available():
            print(f"  GPU memory peak so far {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
