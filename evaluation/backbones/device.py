"""Where models run: CUDA when there is a GPU, else the CPU."""

from __future__ import annotations


def best_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
