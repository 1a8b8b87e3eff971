"""A CLIP model loaded by its real open_clip name from the local store, encoding images and texts
in batches (halved on out-of-memory), L2-normalised, one instance per process and configuration."""
from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

import numpy as np

from evaluation.backbones.catalogue import Checkpoint, OpenClipModel, file_sha256
from evaluation.backbones.device import best_device
from evaluation.backbones.features import FeatureCache, media_sha256

PREPROCESSING_VERSION = "open_clip-val-transform-1"


class ClipEncoder:
    def __init__(self, model: OpenClipModel, checkpoint: Checkpoint | None = None, *, fp16_on_cuda: bool = True,
                 image_batch: int = 64, text_batch: int = 256):
        self.spec, self.checkpoint = model, checkpoint
        self.device = best_device()
        # CLIP-S's reference keeps fp16 weights on CUDA; PAC-S calls model.float(). CPU is fp32 always.
        self.precision = "fp16" if self.device == "cuda" and fp16_on_cuda else "fp32"
        self.image_batch, self.text_batch = image_batch, text_batch
        self._lock = threading.Lock()
        self._loaded = None
        self.images_encoded = 0

    def unavailable_reason(self) -> str | None:
        if self.spec.weights() is None:
            return self.spec.missing()
        if self.checkpoint is not None and not self.checkpoint.path.is_file():
            return self.checkpoint.missing()
        return None

    def fingerprint(self) -> str:
        """The weights that produce the numbers (backbone, then fine-tuned checkpoint)."""
        weights = self.spec.weights()
        parts = [self.spec.name, file_sha256(weights)[:16] if weights else "absent"]
        if self.checkpoint is not None:
            parts.append(file_sha256(self.checkpoint.path)[:16] if self.checkpoint.path.is_file() else "absent")
        return "/".join(parts)

    def _load(self):
        with self._lock:
            if self._loaded is None:
                reason = self.unavailable_reason()
                if reason:
                    from evaluation.metrics.base import MetricUnavailable  # (the metrics package imports us)

                    raise MetricUnavailable(reason)
                import open_clip
                import torch

                override = self.spec.config_override()
                if override is not None:
                    open_clip.add_model_config(override)
                model, _, preprocess = open_clip.create_model_and_transforms(
                    self.spec.architecture, pretrained=str(self.spec.weights()), device=self.device,
                    precision=self.precision)
                if self.checkpoint is not None:
                    state = torch.load(self.checkpoint.path, map_location="cpu", weights_only=True)
                    model.load_state_dict(state.get("state_dict", state))
                    if self.precision == "fp32":
                        model = model.float()
                model.eval()
                self._loaded = (model, preprocess, open_clip.get_tokenizer(self.spec.architecture))
        return self._loaded

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text; each distinct text is encoded once."""
        model, _, tokenizer = self._load()
        distinct = list(dict.fromkeys(texts))
        rows = self._batched(distinct, self.text_batch,
                             lambda part: model.encode_text(tokenizer(part).to(self.device)))
        index = {text: i for i, text in enumerate(distinct)}
        return rows[[index[text] for text in texts]] if len(texts) else rows

    def encode_images(self, paths: Sequence[str], cache: FeatureCache | None = None) -> np.ndarray:
        """One normalised row per image path, from the feature cache where the content was seen."""
        model, preprocess, _ = self._load()
        shas = [media_sha256(path) for path in paths]
        found: dict[str, np.ndarray] = {}
        for sha in dict.fromkeys(shas):
            vector = cache.get(sha) if cache is not None else None
            if vector is not None:
                found[sha] = vector
        todo = [(sha, path) for sha, path in dict(zip(shas, paths, strict=True)).items() if sha not in found]
        if todo:
            from PIL import Image

            def encode(part):
                import torch

                pixels = torch.stack([preprocess(Image.open(p).convert("RGB")) for _, p in part])
                dtype = torch.float16 if self.precision == "fp16" else torch.float32
                return model.encode_image(pixels.to(self.device, dtype=dtype))

            vectors = self._batched(todo, self.image_batch, encode)
            self.images_encoded += len(todo)
            for (sha, _), vector in zip(todo, vectors, strict=True):
                found[sha] = vector
                if cache is not None:
                    cache.put(sha, vector)
        return np.stack([found[sha] for sha in shas]) if shas else np.zeros((0, 0), dtype=np.float32)

    def _batched(self, items: list, size: int, encode) -> np.ndarray:
        """Encode in batches; on CUDA out-of-memory, halve the batch and go on."""
        import torch

        out, start = [], 0
        while start < len(items):
            part = items[start:start + size]
            try:
                with torch.no_grad():
                    features = encode(part).float()
            except torch.OutOfMemoryError:
                if size == 1:
                    raise
                torch.cuda.empty_cache()
                size = max(1, size // 2)
                continue
            features = features / features.norm(dim=-1, keepdim=True)
            out.append(features.cpu().numpy())
            start += len(part)
        return np.concatenate(out) if out else np.zeros((0, 0), dtype=np.float32)

    def feature_cache(self) -> FeatureCache:
        key = "_".join([self.fingerprint().replace("/", "_"), PREPROCESSING_VERSION, self.precision])
        return FeatureCache(key)


@functools.lru_cache(maxsize=8)
def clip_encoder(model: OpenClipModel, checkpoint: Checkpoint | None = None, fp16_on_cuda: bool = True) -> ClipEncoder:
    """One encoder per process and configuration (models load once per worker)."""
    return ClipEncoder(model, checkpoint, fp16_on_cuda=fp16_on_cuda)
