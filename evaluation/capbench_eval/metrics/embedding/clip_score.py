"""CLIP-S / RefCLIP-S (Hessel et al. 2021) and PAC-S / RefPAC-S (Sarto et al. 2023), metrics.md §6–7.

CLIP-S(c, v) = w · max(cos(E_v, E_c), 0) with w = 2.5 (PAC-S: 2.0 and the fine-tuned checkpoint,
fp32). Candidates AND references get the prefix "A photo depicts ". The reference term is the RAW
maximum text–reference cosine (no clipping, no w, as the reference code does), and the Ref- variant
is the harmonic mean 2·S·T/(S+T). Per-caption scores are independent: batches never change them.
A picture is converted to RGB after the resize and centre crop, as both references' transforms do
(`_convert_image_to_rgb` after CenterCrop): it matters for pictures with transparency or a palette."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from capbench_eval.backbones.catalogue import Checkpoint, OpenClipModel, entry
from capbench_eval.backbones.clip import RGB_AFTER_CROP, clip_encoder
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult
from capbench_eval.metrics.registry import register

PREFIX = "A photo depicts "


def clip_s(images: np.ndarray, texts: np.ndarray, w: float) -> np.ndarray:
    """Row-wise w · max(cos, 0) of L2-normalised image and text embeddings."""
    return w * np.clip(np.sum(images * texts, axis=1), 0.0, None)


def reference_term(candidate: np.ndarray, references: np.ndarray) -> float:
    """max over references of the raw cosine (may be negative)."""
    return float(np.max(references @ candidate))


def harmonic_mean(a: float, b: float) -> float:
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


class _ClipFamily(Metric):
    family = "embedding"
    extra = "clip"
    w: float = 2.5
    uses_references = False
    backbone = OpenClipModel("ViT-B-32-quickgelu", "openai")
    checkpoint: Checkpoint | None = None
    fp16_on_cuda = True
    rgb = RGB_AFTER_CROP  # the references convert after Resize and CenterCrop (metrics.md §6)

    @property
    def encoder(self):
        return clip_encoder(self.backbone, self.checkpoint, self.fp16_on_cuda)

    def config(self) -> dict:
        return {
            "w": self.w,
            "prefix": PREFIX,
            "references": self.uses_references,
            "rgb": self.rgb,
            "weights": self.encoder.fingerprint(),
        }

    def unavailable_reason(self) -> str | None:
        return self.encoder.unavailable_reason()

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        self.require_available()
        missing = [row.id for row in rows if not row.media]
        if missing:
            raise ValueError(f"{self.name} needs the image of every row; rows without one: {missing[:5]}")
        encoder = self.encoder
        images = encoder.encode_images([row.media for row in rows], cache=encoder.feature_cache(self.rgb), rgb=self.rgb)
        candidates = encoder.encode_texts([PREFIX + row.candidate for row in rows])
        scores = clip_s(images, candidates, self.w)
        details = None
        if self.uses_references:
            if any(not row.references for row in rows):
                raise ValueError(f"{self.name} needs at least one reference per row")
            references = [PREFIX + ref for row in rows for ref in row.references]
            encoded = encoder.encode_texts(references)
            values, details, start = [], [], 0
            for row, candidate, image_score in zip(rows, candidates, scores, strict=True):
                term = reference_term(candidate, encoded[start : start + len(row.references)])
                start += len(row.references)
                values.append(harmonic_mean(float(image_score), term))
                details.append({"image_score": float(image_score), "reference_term": term})
            scores = np.array(values)
        values = [float(value) for value in scores]
        return MetricResult(
            scores=values, corpus=float(np.mean(values)) if values else None, details=details, statistics=None
        )


@register("clip_s")
class ClipScore(_ClipFamily):
    slug, name = "clip_s", "CLIP-S"
    needs = frozenset({"media", "gpu"})
    citation = "J. Hessel, A. Holtzman, M. Forbes, R. Le Bras and Y. Choi (2021). CLIPScore. EMNLP."
    description = "Reference-free image–caption cosine of CLIP ViT-B/32, 2.5·max(cos, 0)."
    notes: ClassVar[tuple[str, ...]] = (
        "open_clip ViT-B-32-quickgelu/openai (the OpenAI weights); fp16 on CUDA as clip.load does, fp32 on CPU "
        "(4th-decimal differences).",
    )


@register("ref_clip_s")
class RefClipScore(ClipScore):
    slug, name = "ref_clip_s", "RefCLIP-S"
    needs = frozenset({"media", "references", "gpu"})
    uses_references = True
    description = "Harmonic mean of CLIP-S and the best raw text–reference cosine."
    notes = ClipScore.notes + (
        "The text–reference term is the raw cosine, not clipped at 0 and not scaled by w, "
        "as the reference code computes it (the paper writes max(·, 0)).",
    )


@register("pac_s")
class PacScore(_ClipFamily):
    slug, name = "pac_s", "PAC-S"
    needs = frozenset({"media", "gpu"})
    w = 2.0
    checkpoint = entry("pacscore/clip_ViT-B-32.pth", Checkpoint)
    fp16_on_cuda = False  # the reference calls model.float()
    citation = "S. Sarto, M. Barraco, M. Cornia, L. Baraldi and R. Cucchiara (2023). PAC-S. CVPR."
    description = "CLIP-S with positive-augmented contrastive fine-tuning, 2.0·max(cos, 0), fp32."


@register("ref_pac_s")
class RefPacScore(PacScore):
    slug, name = "ref_pac_s", "RefPAC-S"
    needs = frozenset({"media", "references", "gpu"})
    uses_references = True
    description = "Harmonic mean of PAC-S and the best raw text–reference cosine (PAC-S backbone)."
