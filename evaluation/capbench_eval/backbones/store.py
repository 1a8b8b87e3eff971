"""The local model store: every weight file or model folder a metric loads lives under
CAPBENCH_MODEL_DIR (default ~/.cache/capbench/models). Nothing is downloaded at run time."""

from __future__ import annotations

from pathlib import Path

from capbench_eval import config


def model_dir() -> Path:
    return config.env.model_dir or Path.home() / ".cache" / "capbench" / "models"
