"""The text-to-image cycle score (seed 002, metrics.md §12): the caption is turned into a picture by
a text-to-image pipeline, and the score is the cosine between the image features of the original
and of the generated picture. No references.

The seed used DALL-E 3 (which rewrites prompts) or Stable Diffusion, and "ViT-g/14 (EVA)" features.
We generate locally with the shared cycle settings (FLUX.1-dev, 28 steps, guidance 3.5, 512×512, a
seed per caption; CAPBENCH_T2I_* change them) and take open_clip's EVA01-g-14 image embedding,
the projected one, with its own preprocessing; CAPBENCH_T2I_CYCLE_ENCODER picks another open_clip
model of the catalogue. Every choice is in `config()`, so each change is a new version."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from capbench_eval import config
from capbench_eval.backbones.catalogue import CATALOGUE, OpenClipModel
from capbench_eval.backbones.clip import clip_encoder
from capbench_eval.backbones.t2i import GenerationSettings, TextToImage, caption_seed, text_to_image
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult
from capbench_eval.metrics.registry import register


def picture_rows(rows: Sequence[CaptionRow]) -> tuple[list[int], list[dict]]:
    """The rows that have a picture to compare with, and a detail per row (an error for the others)."""
    details = [{} if row.media else {"error": "this caption's item has no image attached"} for row in rows]
    return [i for i, row in enumerate(rows) if row.media], details


def picture_path(row: CaptionRow) -> str:
    """The picture of a row `picture_rows` kept."""
    if not row.media:
        raise ValueError(f"row {row.id!r} has no picture")
    return row.media


class CycleMetric(Metric):
    """What both cycle metrics share: the generation settings and the generated pictures."""

    family = "cycle"
    extra = "vision"
    needs = frozenset({"media", "gpu"})

    @property
    def generator(self) -> TextToImage:
        return text_to_image(GenerationSettings.from_environment())

    def generated(self, rows: Sequence[CaptionRow], kept: list[int], details: list[dict]) -> list[Path]:
        """The generated picture of each kept row (cached ones are read back), noted in its detail."""
        generator = self.generator
        paths = generator.pictures([rows[i].candidate for i in kept])
        for i, path in zip(kept, paths, strict=True):
            details[i]["generated_image"] = path.stem
            details[i]["seed"] = caption_seed(rows[i].candidate, generator.settings.seed)
        return paths


@register("t2i_cycle")
class T2ICycle(CycleMetric):
    slug, name = "t2i_cycle", "T2I cycle score"
    citation = "A Novel Evaluation Framework for Image2Text Generation (Huang et al., LLM4Eval workshop, SIGIR 2024)."
    description = "Caption → text-to-image → cosine of the original's and the generated picture's image features."
    notes = (
        "Generated locally (FLUX.1-dev by default, 28 steps, guidance 3.5, 512×512, a seed per caption from its "
        "text), not with DALL-E 3: DALL-E rewrites prompts, so its pictures cannot be reproduced.",
        "Image features: open_clip EVA01-g-14 (laion400m_s11b_b41k), the projected embedding; the seed's exact "
        "ViT-g/14 checkpoint is not stated.",
        "Generated pictures are cached by caption, pipeline weights, seed, steps, size and guidance, shared with "
        "CAMScore, and shown on the item page.",
    )

    @property
    def encoder_spec(self) -> OpenClipModel | None:
        entry = CATALOGUE.get(config.env.t2i_cycle_encoder)
        return entry if isinstance(entry, OpenClipModel) else None

    def unavailable_reason(self) -> str | None:
        spec = self.encoder_spec
        if spec is None:
            return (
                f"CAPBENCH_T2I_CYCLE_ENCODER={config.env.t2i_cycle_encoder!r} is not an open_clip "
                "model of the catalogue"
            )
        return self.generator.unavailable_reason() or clip_encoder(spec).unavailable_reason()

    def config(self) -> dict:
        spec = self.encoder_spec
        return {
            "t2i": self.generator.identity(),
            "encoder": clip_encoder(spec).fingerprint() if spec else "misconfigured",
        }

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        self.require_available()
        kept, details = picture_rows(rows)
        scores = [math.nan] * len(rows)
        if kept:
            generated = self.generated(rows, kept, details)
            spec = self.encoder_spec
            assert spec is not None  # (require_available checked it)
            encoder = clip_encoder(spec)
            cache = encoder.feature_cache()
            originals = encoder.encode_images([picture_path(rows[i]) for i in kept], cache=cache)
            pictures = encoder.encode_images([str(path) for path in generated], cache=cache)
            for i, a, b in zip(kept, originals, pictures, strict=True):
                scores[i] = float(a @ b)
        values = [s for s in scores if not math.isnan(s)]
        return MetricResult(scores=scores, corpus=sum(values) / len(values) if values else None, details=details)
