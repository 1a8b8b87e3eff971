"""Where models run: CUDA when there is a GPU, else the CPU.

torch is imported inside `best_device`: importing the metrics must not load it (a CPU web process
never needs it)."""

from __future__ import annotations


def best_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
