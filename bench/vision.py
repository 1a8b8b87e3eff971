"""Cycle metrics' cost: seconds per caption for the T2I cycle score and CAMScore, the share of each
stage, and what batching buys, measured with full-size architectures and random weights (speed does
not depend on trained weights) through the metrics' own loading code, against a one-at-a-time
loop over the same models in the same run.

    python -m bench.vision [--captions 32] [--steps 28] [--size 512] [--batch 4] [--t2i sd15|sdxl]

Stages: text-to-image (Stable Diffusion 1.5 or SDXL shapes; FLUX.1-dev's 12B would need its own
download), EVA01-g-14 image features, and CAMScore's levels (CLIP ViT-B/16 on pictures and crops,
YOLOv8x, Depth Anything V2 Large). The generated pictures are cached, so the second metric reuses
them; "naive" generates one caption per pipeline call. Random detectors run without a threshold:
CAMScore keeps `--boxes` detections per picture, HICE-S its cap of 32 regions.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from capbench_eval.metrics import CaptionRow, get

T2I = {"sd15": "stable-diffusion-v1-5/stable-diffusion-v1-5", "sdxl": "stabilityai/stable-diffusion-xl-base-1.0"}
WORDS = ["a dog", "two children", "a red bus", "an old man", "a cat", "a woman", "a bike", "a boat"]
PLACES = ["on the grass", "in the city", "near a lake", "on a sofa", "under a tree", "at the beach"]


def clip_tokenizer(folder: Path):
    from open_clip.tokenizer import SimpleTokenizer
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    bpe = SimpleTokenizer()
    (folder / "vocab.json").write_text(json.dumps(bpe.encoder))
    merges = sorted(bpe.bpe_ranks, key=bpe.bpe_ranks.get)
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(pair) for pair in merges) + "\n")
    eos = bpe.decoder[bpe.eot_token_id]
    return CLIPTokenizer(
        str(folder / "vocab.json"),
        str(folder / "merges.txt"),
        bos_token=bpe.decoder[bpe.sot_token_id],
        eos_token=eos,
        pad_token=eos,
        unk_token=eos,
        model_max_length=77,
    )


def full_size_pipeline(kind: str, folder: Path) -> None:
    """Stable Diffusion 1.5's (or SDXL's) architecture with random weights, saved as a pipeline folder."""
    from diffusers import (
        AutoencoderKL,
        EulerDiscreteScheduler,
        StableDiffusionPipeline,
        StableDiffusionXLPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    if (folder / "model_index.json").exists():
        return
    tokenizer = clip_tokenizer(folder.parent / "tokenizer-source")
    vae = AutoencoderKL(
        block_out_channels=(128, 256, 512, 512),
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        latent_channels=4,
        layers_per_block=2,
        sample_size=512,
    )
    scheduler = EulerDiscreteScheduler(
        beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", steps_offset=1
    )
    large = CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=768,
        intermediate_size=3072,
        num_hidden_layers=12,
        num_attention_heads=12,
        max_position_embeddings=77,
        projection_dim=768,
    )
    if kind == "sd15":
        unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8)
        StableDiffusionPipeline(
            unet=unet,
            vae=vae,
            text_encoder=CLIPTextModel(large),
            tokenizer=tokenizer,
            scheduler=scheduler,
            safety_checker=None,
            feature_extractor=None,
            requires_safety_checker=False,
        ).save_pretrained(folder)
        return
    big = CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=1280,
        intermediate_size=5120,
        num_hidden_layers=32,
        num_attention_heads=20,
        max_position_embeddings=77,
        projection_dim=1280,
    )
    unet = UNet2DConditionModel(
        sample_size=128,
        cross_attention_dim=2048,
        block_out_channels=(320, 640, 1280),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        transformer_layers_per_block=(1, 2, 10),
        attention_head_dim=(5, 10, 20),
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=256,
        projection_class_embeddings_input_dim=2816,
    )
    StableDiffusionXLPipeline(
        unet=unet,
        vae=vae,
        text_encoder=CLIPTextModel(large),
        text_encoder_2=CLIPTextModelWithProjection(big),
        tokenizer=tokenizer,
        tokenizer_2=tokenizer,
        scheduler=scheduler,
    ).save_pretrained(folder)


def full_size_store(store: Path, kind: str) -> None:
    import open_clip
    import torch
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessor

    full_size_pipeline(kind, store / "hf" / T2I[kind])
    for architecture, pretrained in (("EVA01-g-14", "laion400m_s11b_b41k"), ("ViT-B-16-quickgelu", "openai")):
        target = store / "open_clip" / architecture / f"{pretrained}.pt"
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            torch.save(open_clip.create_model(architecture, pretrained=None).state_dict(), target)
    yolo = store / "checkpoints" / "ultralytics" / "yolov8x.pt"
    if not yolo.exists():
        os.environ["YOLO_OFFLINE"] = "1"
        os.environ.setdefault("YOLO_CONFIG_DIR", str(store.parent / "ultralytics"))
        from ultralytics import YOLO

        yolo.parent.mkdir(parents=True, exist_ok=True)
        YOLO("yolov8x.yaml").save(str(yolo))
    depth = store / "hf" / "depth-anything" / "Depth-Anything-V2-Large-hf"
    if not (depth / "config.json").exists():
        backbone = Dinov2Config(
            hidden_size=1024,
            num_hidden_layers=24,
            num_attention_heads=16,
            image_size=518,
            patch_size=14,
            out_indices=[5, 12, 18, 24],
            reshape_hidden_states=False,
        )
        DepthAnythingForDepthEstimation(
            DepthAnythingConfig(
                backbone_config=backbone,
                reassemble_hidden_size=1024,
                patch_size=14,
                neck_hidden_sizes=[256, 512, 1024, 1024],
                fusion_hidden_size=256,
                depth_estimation_type="relative",
            )
        ).save_pretrained(depth)
        DPTImageProcessor(
            size={"height": 518, "width": 518},
            keep_aspect_ratio=True,
            ensure_multiple_of=14,
            image_mean=[0.485, 0.456, 0.406],
            image_std=[0.229, 0.224, 0.225],
        ).save_pretrained(depth)


def full_size_hice(store: Path) -> None:
    """Alpha-CLIP ViT-L/14 (the OpenAI tower and an alpha checkpoint), SAM ViT-B, YOLOv8x as the
    object-aware proposer, and a Flan-T5-base-shaped parser, all random."""
    import open_clip
    import torch
    from transformers import SamConfig, SamModel, SamProcessor, T5Config, T5ForConditionalGeneration

    backbone = store / "open_clip" / "ViT-L-14-quickgelu" / "openai.pt"
    if not backbone.exists():
        backbone.parent.mkdir(parents=True, exist_ok=True)
        torch.save(open_clip.create_model("ViT-L-14-quickgelu", pretrained=None).state_dict(), backbone)
    alpha = store / "checkpoints" / "alpha_clip" / "clip_l14_grit20m_fultune_2xe.pth"
    if not alpha.exists():
        visual = {
            k.removeprefix("visual.").replace(".attn.in_proj_", ".attn.in_proj."): v
            for k, v in torch.load(backbone, weights_only=True).items()
            if k.startswith("visual.")
        }
        visual["conv1_alpha.weight"] = torch.randn(visual["conv1.weight"].shape[0], 1, 14, 14) * 0.01
        alpha.parent.mkdir(parents=True, exist_ok=True)
        torch.save(visual, alpha)
    proposer = store / "checkpoints" / "mobilesamv2" / "ObjectAwareModel.pt"
    if not proposer.exists():
        proposer.parent.mkdir(parents=True, exist_ok=True)
        from ultralytics import YOLO

        YOLO("yolov8x.yaml").save(str(proposer))
    sam = store / "hf" / "facebook" / "sam-vit-base"
    if not (sam / "config.json").exists():
        SamModel(SamConfig()).save_pretrained(sam)
        from transformers import SamImageProcessor

        SamProcessor(image_processor=SamImageProcessor()).save_pretrained(sam)
    parser = store / "hf" / "lizhuang144" / "flan-t5-base-VG-factual-sg"
    if not (parser / "config.json").exists():
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
        from transformers import PreTrainedTokenizerFast

        bpe = Tokenizer(models.BPE(unk_token="<unk>"))
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        bpe.train_from_iterator(
            [f"{w} {p}" for w in WORDS for p in PLACES],
            trainers.BpeTrainer(
                vocab_size=400,
                special_tokens=["<pad>", "</s>", "<unk>"],
                initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            ),
        )
        tokenizer = PreTrainedTokenizerFast(
            tokenizer_object=bpe, pad_token="<pad>", eos_token="</s>", unk_token="<unk>"
        )
        tokenizer.save_pretrained(parser)
        T5ForConditionalGeneration(
            T5Config(
                vocab_size=32128,
                d_model=768,
                d_kv=64,
                d_ff=2048,
                num_layers=12,
                num_heads=12,
                feed_forward_proj="gated-gelu",
                pad_token_id=0,
                eos_token_id=1,
                decoder_start_token_id=0,
            )
        ).save_pretrained(parser)


def photos(folder: Path, count: int) -> list[str]:
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for index in range(count):
        path = folder / f"{index:04d}.jpg"
        if not path.exists():
            Image.fromarray(rng.integers(0, 255, (375, 500, 3), dtype=np.uint8)).save(path, quality=90)
        paths.append(str(path))
    return paths


def timed(action) -> float:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    action()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def stage_timers(stages: list[tuple[str, object, str]]) -> dict[str, float]:
    """Seconds accumulated in each (name, object, method) from now on: the method is wrapped."""
    spent = {name: 0.0 for name, _, _ in stages}
    for name, owner, method in stages:
        original = getattr(owner, method)

        def wrapped(*args, _original=original, _name=name, **kwargs):
            result = []
            spent[_name] += timed(lambda: result.append(_original(*args, **kwargs)))
            return result[0]

        setattr(owner, method, wrapped)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--captions", type=int, default=32)
    parser.add_argument("--steps", type=int, default=28)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--t2i", choices=sorted(T2I), default="sd15")
    parser.add_argument("--naive", type=int, default=4, help="captions for the one-at-a-time comparison")
    parser.add_argument("--boxes", type=int, default=10, help="detections kept per picture (random detectors)")
    parser.add_argument("--hice", action=argparse.BooleanOptionalAction, default=True, help="also time HICE-S")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "capbench-bench-vision")
    args = parser.parse_args()

    import torch

    from capbench_eval.backbones.t2i import GenerationSettings, TextToImage

    store = args.work / "models"
    started = time.perf_counter()
    full_size_store(store, args.t2i)
    print(f"store of full-size random models ready in {time.perf_counter() - started:.0f} s ({store})")
    os.environ.update(
        {
            "CAPBENCH_CAMSCORE_DETECTOR_CONF": "0.0001",
            "CAPBENCH_HICE_PROPOSER_CONF": "0.0001",
            "CAPBENCH_MODEL_DIR": str(store),
            "CAPBENCH_T2I_MODEL": T2I[args.t2i],
            "CAPBENCH_T2I_STEPS": str(args.steps),
            "CAPBENCH_T2I_SIZE": str(args.size),
        }
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    run = args.work / f"run-{time.time_ns()}"
    os.environ["CAPBENCH_GENERATED_DIR"], os.environ["CAPBENCH_FEATURE_DIR"] = (
        str(run / "generated"),
        str(run / "features"),
    )
    images = photos(args.work / "photos", args.captions)
    rows = [
        CaptionRow(str(i), f"{WORDS[i % 8]} {PLACES[(i // 8) % 6]}, picture {i}", (), images[i])
        for i in range(args.captions)
    ]
    print(
        f"device {device} ({torch.cuda.get_device_name() if device == 'cuda' else 'CPU'}); {args.captions} captions; "
        f"{T2I[args.t2i]} {args.steps} steps at {args.size}×{args.size}"
    )

    settings = GenerationSettings.from_environment()
    loader = TextToImage(settings, batch=args.batch)
    load = timed(loader._load)
    naive_rows = rows[: args.naive]
    os.environ["CAPBENCH_GENERATED_DIR"] = str(run / "naive")
    one_by_one = TextToImage(settings, batch=1)
    one_by_one._pipeline = loader._pipeline
    naive = timed(lambda: one_by_one.pictures([row.candidate for row in naive_rows])) / len(naive_rows)
    os.environ["CAPBENCH_GENERATED_DIR"] = str(run / "generated")
    batched = timed(lambda: loader.pictures([row.candidate for row in rows])) / len(rows)
    print(
        f"text-to-image: load {load:.1f} s; {batched:.3f} s/caption in batches of {args.batch}, "
        f"{naive:.3f} s/caption one at a time (batching ×{naive / batched:.2f})"
    )
    prompts = [f"{row.candidate} (again)" for row in rows]  # not in the picture cache

    def pure() -> None:
        for start in range(0, len(prompts), args.batch):
            loader._pipeline(
                prompt=prompts[start : start + args.batch],
                num_inference_steps=settings.steps,
                guidance_scale=settings.guidance,
                height=settings.size,
                width=settings.size,
                output_type="pil",
            )

    floor = timed(pure) / len(rows)
    print(
        f"the diffusers pipeline alone, same settings and batches: {floor:.3f} s/caption "
        f"(our generation is ×{batched / floor:.2f} of it: seeding, PNG writing, cache keys)"
    )

    from capbench_eval.backbones import t2i

    t2i.text_to_image.cache_clear()
    cycle = get("t2i_cycle")
    cycle.generator._pipeline = loader._pipeline  # already loaded and the pictures are cached
    warm = timed(lambda: cycle.score(rows[:2]))
    encode = timed(lambda: cycle.score(rows)) / len(rows)
    print(f"t2i_cycle after generation (EVA01-g-14 on both pictures): {encode:.3f} s/caption (first call {warm:.1f} s)")
    camscore = get("camscore")
    camscore.generator._pipeline = loader._pipeline
    # Random detectors find nothing at real thresholds, or hundreds of boxes at none: take the
    # `--boxes` most confident per picture, about what YOLOv8x finds on a captioning photo.
    detector = camscore.parts()[2]
    every = detector.boxes
    detector.boxes = lambda pictures: [found[: args.boxes] for found in every(pictures)]
    warm = timed(lambda: camscore.levels(rows[:2]))
    _, semantic, objects, depth = camscore.parts()  # the rest of the time: decoding, resizing, matching
    stages = stage_timers(
        [
            ("CLIP B/16 pictures and crops", semantic, "encode_pictures"),
            ("YOLOv8x", objects, "boxes"),
            ("Depth Anything V2 L", depth, "depths"),
        ]
    )
    levels = timed(lambda: camscore.levels(rows)) / len(rows)
    shares = ", ".join(
        f"{name} {seconds / len(rows):.3f} s ({seconds / (levels * len(rows)):.0%})" for name, seconds in stages.items()
    )
    print(f"camscore levels after generation: {levels:.3f} s/caption (first call {warm:.1f} s): {shares}")
    hice_seconds = hice_stages(rows, args.work / "models") if args.hice else None
    total_cycle, total_cam = batched + encode, batched + levels
    print(f"t2i_cycle end to end is ×{total_cycle / floor:.2f} of the pure pipeline's generation (target ≤ 1.3)")
    print(
        f"per caption: t2i_cycle {total_cycle:.3f} s (generation {batched / total_cycle:.0%}); "
        f"camscore {total_cam:.3f} s (generation {batched / total_cam:.0%}); both share one generation: "
        f"{batched + encode + levels:.3f} s"
    )
    if hice_seconds is not None:
        print(f"hice_s: {hice_seconds:.3f} s/caption")
    if torch.cuda.is_available():
        print(f"GPU memory peak over the whole run: {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB")


def hice_stages(rows: list[CaptionRow], store: Path) -> float:
    """HICE-S per caption with its stages, and Alpha-CLIP's region passes batched against one per pass.
    The random proposer runs at no threshold, so every picture gets the metric's cap of 32 regions."""
    from PIL import Image

    from capbench_eval.backbones.alpha_clip import AlphaClip
    from capbench_eval.metrics.vision.hice import ALPHA, BACKBONE

    full_size_hice(store)
    metric = get("hice_s")
    encoder, regions, parser = metric.parts()
    warm = timed(lambda: metric.score(rows[:1]))
    spent = stage_timers(
        [
            ("regions (proposer + SAM)", regions, "regions"),
            ("Alpha-CLIP", encoder, "encode_regions"),
            ("FACTUAL parse", parser, "parse"),
        ]
    )
    fresh = rows[1:] or rows
    total = timed(lambda: metric.score(fresh)) / len(fresh)
    shares = ", ".join(
        f"{name} {seconds / len(fresh):.3f} s ({seconds / (total * len(fresh)):.0%})" for name, seconds in spent.items()
    )
    print(f"hice_s (first call {warm:.1f} s): {total:.3f} s/caption: {shares}")
    picture = Image.open(rows[0].media).convert("RGB")
    masks = [np.random.default_rng(i).random((picture.size[1], picture.size[0])) > 0.5 for i in range(32)]
    one = AlphaClip(BACKBONE, ALPHA, batch=1)
    batched = timed(lambda: encoder.encode_regions(picture, masks))
    single = timed(lambda: one.encode_regions(picture, masks))
    print(
        f"Alpha-CLIP, 32 region passes of one picture: batched {batched:.3f} s, one at a time {single:.3f} s "
        f"(×{single / batched:.2f})"
    )
    return total


if __name__ == "__main__":
    main()
