"""A transformers depth-estimation model (Depth Anything V2) from the model store: relative inverse
depth maps, resized back to each picture's size.

torch and transformers are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from capbench_eval.backbones.catalogue import HfModel, folder_sha256, offline
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use


class DepthEstimator(LazyModel):
    def __init__(self, model: HfModel, *, batch: int = 8):
        self.spec, self.batch = model, batch
        self.device = best_device()
        super().__init__()

    def unavailable_reason(self) -> str | None:
        return None if self.spec.present() else self.spec.missing()

    def fingerprint(self) -> str:
        return f"{self.spec.name}@{folder_sha256(self.spec.folder)[:16] if self.spec.present() else 'absent'}"

    def build(self):
        offline()
        from transformers import AutoImageProcessor, AutoModelForDepthEstimation

        processor = AutoImageProcessor.from_pretrained(self.spec.folder)
        model = AutoModelForDepthEstimation.from_pretrained(self.spec.folder).to(self.device).eval()
        return (processor, model)

    @in_use
    def depths(self, pictures: Sequence) -> list[np.ndarray]:
        """One (height, width) map per PIL picture."""
        import torch

        processor, model = self._load()
        out = []
        for start in range(0, len(pictures), self.batch):
            part = [picture.convert("RGB") for picture in pictures[start : start + self.batch]]
            inputs = processor(images=part, return_tensors="pt").to(self.device)
            with torch.no_grad():
                predicted = model(**inputs).predicted_depth.float()
            for picture, depth in zip(part, predicted, strict=True):
                resized = torch.nn.functional.interpolate(
                    depth[None, None], size=picture.size[::-1], mode="bicubic", align_corners=False
                )
                out.append(resized[0, 0].cpu().numpy())
        return out


@functools.lru_cache(maxsize=2)
def depth_estimator(model: HfModel) -> DepthEstimator:
    return DepthEstimator(model)
