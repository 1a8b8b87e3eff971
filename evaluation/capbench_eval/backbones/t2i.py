"""Text-to-image generation for the cycle metrics (T2I cycle score, CAMScore): a diffusers pipeline
loaded by its real name from the model store (Stable Diffusion, SDXL, FLUX: whatever
`DiffusionPipeline` resolves from the folder's model_index.json), one seed per caption so the same
caption always starts from the same noise whatever it is batched with (batched kernels may still move
a pixel value by a unit or two), and an on-disk cache of the pictures keyed by everything that
determines them (caption, model weights, seed, steps, size,
guidance). Both metrics read the same cached picture, and the platform shows it on the item page.

torch and diffusers are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from capbench_eval import config
from capbench_eval.backbones.catalogue import CATALOGUE, DiffusersPipeline, folder_sha256, offline
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.backbones.store import model_dir
from capbench_eval.files import atomic_path, atomic_write_text

DEFAULT_T2I = config.Library.t2i_model.default
KEY = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class GenerationSettings:
    model: str = DEFAULT_T2I
    steps: int = config.Library.t2i_steps.default  # FluxPipeline's default
    guidance: float = config.Library.t2i_guidance.default  # FluxPipeline's default
    size: int = config.Library.t2i_size.default  # CAMScore compares at 512×512
    seed: int = config.Library.t2i_seed.default  # added to each caption's seed

    @classmethod
    def from_environment(cls) -> GenerationSettings:
        env = config.env
        return cls(env.t2i_model, env.t2i_steps, env.t2i_guidance, env.t2i_size, env.t2i_seed)


def caption_seed(caption: str, base: int) -> int:
    """The caption's own seed: the same text always starts from the same noise."""
    return (int(hashlib.sha256(caption.encode()).hexdigest()[:8], 16) + base) % 2**31


def generated_dir() -> Path:
    return config.env.generated_dir or model_dir().parent / "generated"


def generated_path(key: str) -> Path | None:
    """Where the picture with this key is, if it exists (`key` is checked: never a path from outside)."""
    if not KEY.match(key):
        return None
    path = generated_dir() / key[:2] / f"{key}.png"
    return path if path.is_file() else None


class TextToImage(LazyModel):
    """Pictures for captions through one pipeline, generated in batches, cached on disk."""

    def __init__(self, settings: GenerationSettings, *, batch: int = 4):
        self.settings, self.batch = settings, batch
        self.device = best_device()
        self.generated = 0
        super().__init__()
        self._fingerprint: str | None = None

    @property
    def spec(self) -> DiffusersPipeline | None:
        entry = CATALOGUE.get(self.settings.model)
        return entry if isinstance(entry, DiffusersPipeline) else None

    def unavailable_reason(self) -> str | None:
        if self.spec is None:
            known = ", ".join(n for n, e in CATALOGUE.items() if isinstance(e, DiffusersPipeline))
            return (
                f"CAPBENCH_T2I_MODEL={self.settings.model!r} is not a text-to-image pipeline of the catalogue ({known})"
            )
        return None if self.spec.present() else self.spec.missing()

    def fingerprint(self) -> str:
        """The pipeline's weights, hashed once per instance (a FLUX folder is tens of GB)."""
        if self._fingerprint is None:
            spec = self.spec
            weights = folder_sha256(spec.folder)[:16] if spec is not None and spec.present() else "absent"
            if weights == "absent":
                return f"{self.settings.model}@absent"  # not remembered: the weights may arrive later
            self._fingerprint = f"{self.settings.model}@{weights}"
        return self._fingerprint

    def identity(self) -> dict:
        return {**asdict(self.settings), "weights": self.fingerprint()}

    def key(self, caption: str) -> str:
        text = json.dumps({"caption": caption, **self.identity()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def build(self):
        self.require_available()
        offline()
        import torch
        from diffusers import DiffusionPipeline

        spec = self.spec
        assert spec is not None  # (require_available checked it)
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        pipeline = DiffusionPipeline.from_pretrained(spec.folder, dtype=dtype)
        if getattr(pipeline, "safety_checker", None) is not None:
            pipeline.safety_checker = None  # a blacked-out picture would be scored as the caption's
        pipeline.set_progress_bar_config(disable=True)
        return pipeline.to(self.device)

    @property
    def _pipeline(self):
        """The loaded pipeline (bench/vision.py hands one loaded pipeline to other instances)."""
        return self._loaded

    @_pipeline.setter
    def _pipeline(self, pipeline) -> None:
        self._loaded = pipeline

    def pictures(self, captions: Sequence[str]) -> list[Path]:
        """One PNG per caption (cached ones are not generated again), in order."""
        keys = [self.key(caption) for caption in captions]
        todo = list(
            dict.fromkeys(caption for caption, key in zip(captions, keys, strict=True) if generated_path(key) is None)
        )
        for start in range(0, len(todo), self.batch):
            part = todo[start : start + self.batch]
            for caption, picture in zip(part, self._generate(part), strict=True):
                self._store(caption, picture)
        paths = []
        for key in keys:
            path = generated_path(key)
            if path is None:  # removed since it was written (a cache cleared meanwhile)
                raise RuntimeError(f"the generated picture {key} is gone from {generated_dir()}")
            paths.append(path)
        return paths

    @in_use
    def _generate(self, captions: list[str]):
        import torch

        pipeline = self._load()
        settings = self.settings
        generators = [torch.Generator(device="cpu").manual_seed(caption_seed(c, settings.seed)) for c in captions]
        with self._lock, torch.no_grad():  # the scheduler keeps per-call state
            output = pipeline(
                prompt=list(captions),
                num_inference_steps=settings.steps,
                guidance_scale=settings.guidance,
                height=settings.size,
                width=settings.size,
                generator=generators,
                output_type="pil",
            )
        self.generated += len(captions)
        return output.images

    def _store(self, caption: str, picture) -> None:
        key = self.key(caption)
        target = generated_dir() / key[:2] / f"{key}.png"
        with atomic_path(target) as partial:
            picture.convert("RGB").save(partial, format="PNG")
            atomic_write_text(target.with_suffix(".json"), json.dumps({"caption": caption, **self.identity()}))


@functools.lru_cache(maxsize=2)
def text_to_image(settings: GenerationSettings) -> TextToImage:
    """One pipeline per process and settings."""
    return TextToImage(settings)
