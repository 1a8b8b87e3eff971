"""CAMScore (seed 004, metrics.md §11): the caption is turned into a picture (the cycle metrics'
shared, cached generation), and the original and the generated picture, both at 512×512, are
compared at five levels: pixel (RMS difference), semantic (CLIP ViT-B/16 image cosine), object
(YOLO boxes on both, crops encoded with the same CLIP, Hungarian matching with m×m padding), spatial
(mean CIoU loss of the matched boxes) and depth (scale-invariant log error of Depth Anything V2
maps). An MLP trained on the platform's human judgments fuses the sigmoid-squashed levels; each
level's raw value stays in the score detail, with the boxes and the matches."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from capbench_eval import config
from capbench_eval.backbones.catalogue import Checkpoint, HfModel, OpenClipModel, entry, file_sha256
from capbench_eval.backbones.clip import ClipEncoder, clip_encoder
from capbench_eval.backbones.depth import DepthEstimator, depth_estimator
from capbench_eval.backbones.detector import Detector, detector
from capbench_eval.backbones.t2i import TextToImage
from capbench_eval.metrics.base import CaptionRow, MetricResult, MetricUnavailable
from capbench_eval.metrics.registry import register
from capbench_eval.metrics.vision.cycle import CycleMetric, picture_path, picture_rows
from capbench_eval.metrics.vision.fusion import LEVELS, Fusion
from capbench_eval.metrics.vision.levels import (
    cosine,
    mean_ciou_loss,
    object_matching,
    pixel_distance,
    scale_invariant_log_error,
)

if TYPE_CHECKING:
    from PIL import Image

SIDE = 512
SEMANTIC = entry("ViT-B-16-quickgelu/openai", OpenClipModel)
YOLO = entry("ultralytics/yolov8x.pt", Checkpoint)
DEPTH = entry("depth-anything/Depth-Anything-V2-Large-hf", HfModel)
FUSION = entry("camscore/fusion.pt", Checkpoint)


def square(path: str) -> Image.Image:
    from PIL import Image  # here: importing the library must not need Pillow

    with Image.open(path) as picture:
        return picture.convert("RGB").resize((SIDE, SIDE), Image.Resampling.BICUBIC)


@dataclass
class Seen:
    picture: Image.Image  # the 512×512 square
    whole: np.ndarray  # its CLIP feature
    boxes: np.ndarray  # (k, 4) pixels
    crops: np.ndarray  # (k, d) the boxes' CLIP features
    depth: np.ndarray  # (512, 512) relative inverse depth


def crop(picture: Image.Image, box: Sequence[float]) -> Image.Image:
    """The box's pixels, at least one pixel wide and high (a degenerate detection still has a crop)."""
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    x1, y1 = min(max(x1, 0), SIDE - 1), min(max(y1, 0), SIDE - 1)
    return picture.crop((x1, y1, max(x2, x1 + 1), max(y2, y1 + 1)))


@register("camscore")
class CamScore(CycleMetric):
    slug, name = "camscore", "CAMScore"
    citation = "CAMScore: cycle-consistent evaluation of image captions through text-to-image generation (2024)."
    description = (
        "Caption → picture; pixel, semantic, object, spatial and depth agreement with the original, fused "
        "by an MLP trained on human judgments."
    )
    notes = (
        "Both pictures are compared at 512×512 (the original squashed to it, as the seed resizes it), the "
        "generated one made at 512×512 with the cycle metrics' shared settings (FLUX.1-dev, 28 steps, guidance "
        "3.5).",
        "Pixel level: the Euclidean distance over all values in [0, 1] divided by √(count), i.e. the RMS "
        "difference, so the sigmoid before the fusion does not saturate.",
        "Object level: the matched costs summed and divided by the original's object count m (a missing object "
        "costs 1); no objects in either picture → 0, only in the generated one → 1. Spatial: the mean CIoU loss "
        "over matched pairs, boxes scaled by picture size; no pair → 1 (0 if neither picture has objects). "
        "YOLOv8x at ultralytics' defaults (confidence 0.25, IoU 0.7, 640 px).",
        "Depth: Depth Anything V2 Large relative inverse depth over the whole picture, each map divided by its "
        "maximum and floored at 1e-3 before the logarithm; λ = 1.",
        "Fusion: Linear(5→32)–Tanh–Linear(32→1)–sigmoid on σ(level), trained with `manage.py metrics train "
        "camscore` (MSE, Adam 3e-5, batch 64, early stopping on validation Kendall τ-b); the checkpoint records "
        "the dataset and split it saw, shown in the configuration.",
    )

    @property
    def confidence(self) -> float:
        return config.env.camscore_detector_conf

    def parts(self) -> tuple[TextToImage, ClipEncoder, Detector, DepthEstimator]:
        return self.generator, clip_encoder(SEMANTIC), detector(YOLO, self.confidence), depth_estimator(DEPTH)

    def levels_unavailable(self) -> str | None:
        return next((reason for part in self.parts() if (reason := part.unavailable_reason())), None)

    def unavailable_reason(self) -> str | None:
        return self.levels_unavailable() or (
            None
            if FUSION.path.is_file()
            else f"{FUSION.missing()}; train it with `manage.py metrics train camscore --dataset SLUG`"
        )

    def config(self) -> dict:
        generator, semantic, objects, depth = self.parts()
        fusion = (
            {"weights": file_sha256(FUSION.path)[:16], "trained_on": Fusion.load(FUSION.path).record}
            if FUSION.path.is_file()
            else "absent"
        )
        return {
            "t2i": generator.identity(),
            "semantic": semantic.fingerprint(),
            "detector": objects.fingerprint(),
            "detector_confidence": self.confidence,
            "depth": depth.fingerprint(),
            "side": SIDE,
            "fusion": fusion,
        }

    def levels(self, rows: Sequence[CaptionRow], *, chunk: int = 32) -> tuple[list[int], list[dict]]:
        """The raw level values of every row with a picture (in its detail), before any fusion; `chunk`
        rows at a time, so memory stays bounded however many rows come (a training split)."""
        reason = self.levels_unavailable()
        if reason:
            raise MetricUnavailable(reason)
        kept, details = picture_rows(rows)
        for start in range(0, len(kept), chunk):
            self._compare(rows, kept[start : start + chunk], details)
        return kept, details

    def _compare(self, rows: Sequence[CaptionRow], part: list[int], details: list[dict]) -> None:
        generated = self.generated(rows, part, details)
        seen = self._look(
            list(dict.fromkeys([picture_path(rows[i]) for i in part] + [str(path) for path in generated]))
        )
        for i, path in zip(part, generated, strict=True):
            a, b = seen[picture_path(rows[i])], seen[str(path)]
            object_cost, pairs = object_matching(a.crops, b.crops)
            unit_a, unit_b = a.boxes / SIDE, b.boxes / SIDE
            details[i].update(
                {
                    "pixel": pixel_distance(np.asarray(a.picture) / 255.0, np.asarray(b.picture) / 255.0),
                    "semantic": cosine(a.whole, b.whole),
                    "object": object_cost,
                    "ciou": mean_ciou_loss(unit_a, unit_b, pairs),
                    "depth": scale_invariant_log_error(b.depth, a.depth),
                    "boxes_original": np.round(unit_a, 4).tolist(),
                    "boxes_generated": np.round(unit_b, 4).tolist(),
                    "matches": [[a_index, b_index, round(cost, 4)] for a_index, b_index, cost in pairs],
                }
            )

    def _look(self, paths: list[str]) -> dict[str, Seen]:
        """Each distinct picture once (an original shared by five captions, a caption written twice):
        the 512×512 square, its CLIP feature, boxes, crops' features and depth map."""
        _, semantic, objects, depth = self.parts()
        pictures = [square(path) for path in paths]
        whole = semantic.encode_pictures(pictures)
        boxes = objects.boxes(pictures)
        depths = depth.depths(pictures)
        crops = semantic.encode_pictures(
            [crop(p, box) for p, found in zip(pictures, boxes, strict=True) for box in found]
        )
        seen: dict[str, Seen] = {}
        start = 0
        for path, picture, feature, found, depth_map in zip(paths, pictures, whole, boxes, depths, strict=True):
            seen[path] = Seen(picture, feature, found, crops[start : start + len(found)], depth_map)
            start += len(found)
        return seen

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        self.require_available()
        kept, details = self.levels(rows)
        fused = Fusion.load(FUSION.path)([{name: details[i][name] for name in LEVELS} for i in kept])
        scores = [math.nan] * len(rows)
        for i, value in zip(kept, fused, strict=True):
            scores[i] = value
        values = [s for s in scores if not math.isnan(s)]
        return MetricResult(scores=scores, corpus=sum(values) / len(values) if values else None, details=details)
