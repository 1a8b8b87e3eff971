"""Alpha-CLIP (Sun et al. 2024) on open_clip: the OpenAI CLIP ViT (open_clip's layout matches the
original's but for the attention's qkv naming, mapped on load; QuickGELU) with Alpha-CLIP's visual weights and its one addition, a bias-free convolution of the
alpha mask whose output is added to the RGB patch embedding before the class token and positional
embedding. It is attached as a forward hook on `visual.conv1`, so the rest of open_clip's forward
runs unchanged. Text features are the plain CLIP text tower's (Alpha-CLIP leaves it frozen).

Pictures and masks are centre-cropped together to a square and resized to the model's input size
(as Alpha-CLIP's own evaluation does; its README's squashing mask resize would misalign them); the
mask is normalised with mean 0.5 and std 0.26, so inside = +1.923 and outside = −1.923.

torch and open_clip are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from capbench_eval.backbones.catalogue import Checkpoint, OpenClipModel, file_sha256
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use

if TYPE_CHECKING:
    import torch

ALPHA_MEAN, ALPHA_STD = 0.5, 0.26


def authors_to_open_clip(key: str) -> str:
    """Alpha-CLIP's attention keeps its qkv projection as a Linear (`attn.in_proj.weight`/`.bias`),
    where open_clip (like OpenAI's nn.MultiheadAttention) has `attn.in_proj_weight`/`_bias`."""
    return key.replace(".attn.in_proj.weight", ".attn.in_proj_weight").replace(
        ".attn.in_proj.bias", ".attn.in_proj_bias"
    )


def square_crop_box(width: int, height: int) -> tuple[int, int, int, int]:
    side = min(width, height)
    left, top = (width - side) // 2, (height - side) // 2
    return left, top, left + side, top + side


class AlphaClip(LazyModel):
    def __init__(self, backbone: OpenClipModel, checkpoint: Checkpoint, *, batch: int = 32):
        self.spec, self.checkpoint, self.batch = backbone, checkpoint, batch
        self.device = best_device()
        super().__init__()
        self._alpha: torch.Tensor | None = None  # the batch's alpha tensor while the vision tower runs
        self._alpha_conv: torch.nn.Conv2d | None = None

    def unavailable_reason(self) -> str | None:
        if self.spec.weights() is None:
            return self.spec.missing()
        return None if self.checkpoint.path.is_file() else self.checkpoint.missing()

    def fingerprint(self) -> str:
        weights = self.spec.weights()
        parts = [
            self.spec.name,
            file_sha256(weights)[:16] if weights else "absent",
            self.checkpoint.name,
            file_sha256(self.checkpoint.path)[:16] if self.checkpoint.path.is_file() else "absent",
        ]
        return "/".join(parts)

    def build(self):
        self.require_available()
        import open_clip
        import torch

        override = self.spec.config_override()
        if override is not None:
            open_clip.add_model_config(override)
        model = open_clip.create_model(
            self.spec.architecture, pretrained=str(self.spec.weights()), device="cpu", precision="fp32"
        )
        state = torch.load(self.checkpoint.path, map_location="cpu", weights_only=True)
        state = state.get("state_dict", state)
        state = {authors_to_open_clip(key.removeprefix("visual.")): value for key, value in state.items()}
        alpha_weight = state.pop("conv1_alpha.weight", None)
        model.visual.load_state_dict(state)
        conv = model.visual.conv1
        alpha = torch.nn.Conv2d(1, conv.out_channels, kernel_size=conv.kernel_size, stride=conv.stride, bias=False)
        with torch.no_grad():
            alpha.weight.copy_(alpha_weight if alpha_weight is not None else torch.zeros_like(alpha.weight))
        model.visual.conv1_alpha = alpha
        self._alpha_conv = alpha
        conv.register_forward_hook(self._add_alpha)
        model = model.to(self.device).eval()
        size = model.visual.image_size
        size = size[0] if isinstance(size, tuple | list) else size
        return (model, open_clip.get_tokenizer(self.spec.architecture), int(size))

    def _add_alpha(self, conv, inputs, output):
        """conv1's forward hook: the RGB patch embedding plus the alpha convolution of the current masks."""
        if self._alpha is None or self._alpha_conv is None:  # (the conv is set before the hook)
            return output
        return output + self._alpha_conv(self._alpha.to(output.dtype))

    @in_use
    def tensors(self, picture, masks: Sequence[np.ndarray]):
        """The RGB tensor of the picture and one alpha tensor per mask (True inside), both cropped
        to the centre square and resized to the model's size."""
        import torch
        from open_clip.constants import OPENAI_DATASET_MEAN, OPENAI_DATASET_STD
        from PIL import Image  # here: importing the library must not need Pillow

        _, _, size = self._load()
        box = square_crop_box(*picture.size)
        rgb: np.ndarray = (
            np.asarray(
                picture.convert("RGB").crop(box).resize((size, size), Image.Resampling.BICUBIC), dtype=np.float32
            )
            / 255.0
        )
        rgb = (rgb - np.array(OPENAI_DATASET_MEAN, dtype=np.float32)) / np.array(OPENAI_DATASET_STD, dtype=np.float32)
        alphas = []
        for mask in masks:
            image = Image.fromarray((np.asarray(mask, dtype=bool) * 255).astype(np.uint8)).crop(box)
            values = np.asarray(image.resize((size, size), Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
            alphas.append((values - ALPHA_MEAN) / ALPHA_STD)
        return (torch.from_numpy(rgb).permute(2, 0, 1), [torch.from_numpy(values)[None] for values in alphas])

    @in_use
    def encode_regions(self, picture, masks: Sequence[np.ndarray]) -> np.ndarray:
        """One L2-normalised feature per mask of the picture (an all-True mask is the whole picture)."""
        import torch

        model, _, _ = self._load()
        rgb, alphas = self.tensors(picture, masks)
        rows = []
        with self._lock, torch.no_grad():
            for start in range(0, len(alphas), self.batch):
                part = alphas[start : start + self.batch]
                self._alpha = torch.stack(part).to(self.device)
                try:
                    features = model.encode_image(rgb[None].expand(len(part), -1, -1, -1).to(self.device))
                finally:
                    self._alpha = None
                rows.append(torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    @in_use
    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        model, tokenizer, _ = self._load()
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with torch.no_grad():
            features = model.encode_text(tokenizer(list(texts)).to(self.device))
        return torch.nn.functional.normalize(features.float(), dim=-1).cpu().numpy()


@functools.lru_cache(maxsize=2)
def alpha_clip(backbone: OpenClipModel, checkpoint: Checkpoint) -> AlphaClip:
    return AlphaClip(backbone, checkpoint)
