"""Segment-everything the MobileSAMv2 way: an object-aware YOLO proposes boxes (its
ObjectAwareModel.pt, at conf 0.4, IoU 0.9, 1024 px), and each box prompts a SAM mask decoder
(one mask per box, logits > 0; 64 boxes per SAM pass). SAM runs through transformers (`SamModel` + `SamProcessor` from the
store, facebook/sam-vit-base by default): MobileSAMv2's EfficientViT image encoder is not packaged
anywhere we can load by name, so the encoder is SAM's own (a documented substitution). Masks
covering less than `min_area` of the picture's centre square (what Alpha-CLIP sees) are dropped,
then at most `max_masks` are kept, the detector's most confident first.

torch and transformers are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from capbench_eval.backbones.catalogue import Checkpoint, HfModel, folder_sha256, offline
from capbench_eval.backbones.detector import Detector
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use


@dataclass
class Regions:
    masks: list[np.ndarray]  # (height, width) bool, one per kept region
    boxes: list[list[float]]  # the prompting box of each, x1 y1 x2 y2 in pixels


class Segmenter(LazyModel):
    def __init__(
        self,
        proposer: Checkpoint,
        sam: HfModel,
        *,
        confidence: float = 0.4,
        iou: float = 0.9,
        size: int = 1024,
        max_masks: int = 32,
        min_area: float = 0.005,
    ):
        self.detector = Detector(proposer, confidence=confidence, iou=iou, size=size)
        self.sam, self.max_masks, self.min_area = sam, max_masks, min_area
        self.device = best_device()
        super().__init__()

    def unavailable_reason(self) -> str | None:
        return self.detector.unavailable_reason() or (None if self.sam.present() else self.sam.missing())

    def fingerprint(self) -> str:
        sam = folder_sha256(self.sam.folder)[:16] if self.sam.present() else "absent"
        return f"{self.detector.fingerprint()}+{self.sam.name}@{sam}"

    def settings(self) -> dict:
        return {
            "confidence": self.detector.confidence,
            "iou": self.detector.iou,
            "size": self.detector.size,
            "max_masks": self.max_masks,
            "min_area": self.min_area,
        }

    def large_enough(self, mask: np.ndarray) -> bool:
        """At least `min_area` of the picture's centre square, the part the region encoder sees."""
        height, width = mask.shape
        side = min(height, width)
        top, left = (height - side) // 2, (width - side) // 2
        return bool(mask[top : top + side, left : left + side].sum() >= self.min_area * side * side)

    def build(self):
        offline()
        from transformers import SamModel, SamProcessor

        processor = SamProcessor.from_pretrained(self.sam.folder)
        model = SamModel.from_pretrained(self.sam.folder)
        # transformers wraps PreTrainedModel.to with functools.wraps, which typeshed types unbound
        return (processor, model.to(self.device).eval())  # type: ignore[arg-type]

    @in_use
    def regions(self, picture, *, prompts_per_pass: int = 64) -> Regions:
        import torch

        boxes = self.detector.boxes([picture])[0]
        if not len(boxes):
            return Regions([], [])
        processor, model = self._load()
        picture = picture.convert("RGB")
        masks, kept_boxes, embeddings = [], [], None
        for start in range(0, len(boxes), prompts_per_pass):
            part = boxes[start : start + prompts_per_pass]
            inputs = processor(images=picture, input_boxes=[part.tolist()], return_tensors="pt").to(self.device)
            pixels = inputs.pop("pixel_values")
            with torch.no_grad():
                if embeddings is None:  # the image encoder runs once per picture
                    embeddings = model.get_image_embeddings(pixels)
                output = model(**inputs, image_embeddings=embeddings, multimask_output=False)
            found = processor.image_processor.post_process_masks(
                output.pred_masks.cpu(), inputs["original_sizes"].cpu(), inputs["reshaped_input_sizes"].cpu()
            )[0][:, 0]
            for box, mask in zip(part, found.numpy(), strict=True):
                if self.large_enough(mask):
                    masks.append(mask.astype(bool))
                    kept_boxes.append(box.round(1).tolist())
            if len(masks) >= self.max_masks:
                break
        return Regions(masks[: self.max_masks], kept_boxes[: self.max_masks])


@functools.lru_cache(maxsize=2)
def segmenter(proposer: Checkpoint, sam: HfModel, confidence: float = 0.4) -> Segmenter:
    return Segmenter(proposer, sam, confidence=confidence)
