"""An ultralytics YOLO detector loaded by name from the model store's checkpoints (YOLOv8x for
CAMScore), returning boxes in pixels. Nothing is downloaded: YOLO_OFFLINE is set and its settings
live under the store.

ultralytics is imported inside the method that builds the detector: importing the metrics must not
load it (a CPU web process never needs it)."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence

import numpy as np

from capbench_eval.backbones.catalogue import Checkpoint, file_sha256
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.backbones.store import model_dir


class Detector(LazyModel):
    def __init__(
        self, checkpoint: Checkpoint, *, confidence: float = 0.25, iou: float = 0.7, size: int = 640, batch: int = 16
    ):
        self.checkpoint, self.confidence, self.iou, self.size, self.batch = checkpoint, confidence, iou, size, batch
        self.device = best_device()
        super().__init__()

    def unavailable_reason(self) -> str | None:
        return None if self.checkpoint.path.is_file() else self.checkpoint.missing()

    def fingerprint(self) -> str:
        path = self.checkpoint.path
        return f"{self.checkpoint.name}@{file_sha256(path)[:16] if path.is_file() else 'absent'}"

    def build(self):
        os.environ.setdefault("YOLO_OFFLINE", "1")
        os.environ.setdefault("YOLO_CONFIG_DIR", str(model_dir().parent / "ultralytics"))
        from ultralytics import YOLO

        return YOLO(str(self.checkpoint.path))

    @in_use
    def boxes(self, pictures: Sequence) -> list[np.ndarray]:
        """(k, 4) x1 y1 x2 y2 boxes in pixels per PIL picture, most confident first."""
        model = self._load()
        out: list[np.ndarray] = []
        for start in range(0, len(pictures), self.batch):  # ultralytics makes one batch of whatever it is given
            with self._lock:  # its predictor keeps per-call state
                results = model.predict(
                    list(pictures[start : start + self.batch]),
                    conf=self.confidence,
                    iou=self.iou,
                    imgsz=self.size,
                    device=self.device,
                    verbose=False,
                )
            out.extend(result.boxes.xyxy.cpu().numpy().astype(np.float64) for result in results)
        return out


@functools.lru_cache(maxsize=2)
def detector(checkpoint: Checkpoint, confidence: float = 0.25) -> Detector:
    return Detector(checkpoint, confidence=confidence)
