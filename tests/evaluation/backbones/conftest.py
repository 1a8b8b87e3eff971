"""A tiny random CLIP in a temporary model store, laid out exactly as the real ones are, so the
metrics go through their real loading code (open_clip by name, weights file, checkpoint)."""
from __future__ import annotations

import json

import numpy as np
import pytest

TINY_CLIP = {"embed_dim": 32, "quick_gelu": True,
             "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
             "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


@pytest.fixture
def model_store(tmp_path, monkeypatch):
    import open_clip
    import torch

    from evaluation.backbones.clip import clip_encoder

    store = tmp_path / "models"
    folder = store / "open_clip" / "ViT-B-32-quickgelu"
    folder.mkdir(parents=True)
    config = folder / "ViT-B-32-quickgelu.json"
    config.write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(config)
    torch.manual_seed(0)
    model = open_clip.create_model("ViT-B-32-quickgelu", pretrained=None)
    torch.save(model.state_dict(), folder / "openai.pt")
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(store))
    monkeypatch.setenv("CAPBENCH_FEATURE_DIR", str(tmp_path / "features"))
    clip_encoder.cache_clear()
    yield store
    clip_encoder.cache_clear()


@pytest.fixture
def pac_checkpoint(model_store):
    """A "fine-tuned" checkpoint: the backbone with perturbed weights, saved as PAC-S ships it."""
    import torch

    state = torch.load(model_store / "open_clip" / "ViT-B-32-quickgelu" / "openai.pt", weights_only=True)
    generator = torch.Generator().manual_seed(1)
    tuned = {key: value + 0.05 * torch.randn(value.shape, generator=generator) if value.is_floating_point() else value
             for key, value in state.items()}
    path = model_store / "checkpoints" / "pacscore" / "clip_ViT-B-32.pth"
    path.parent.mkdir(parents=True)
    torch.save({"state_dict": tuned, "epoch": 3}, path)
    return path


@pytest.fixture
def images(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    paths = []
    for index in range(5):
        path = tmp_path / f"image-{index}.png"
        Image.fromarray(rng.integers(0, 255, (40, 48, 3), dtype=np.uint8)).save(path)
        paths.append(str(path))
    return paths
