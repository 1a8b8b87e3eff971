"""The local model store: every weight file or model folder a metric loads lives under
CAPBENCH_MODEL_DIR (default ~/.cache/capbench/models). Nothing is downloaded at run time."""
from __future__ import annotations

import os
from pathlib import Path


def model_dir() -> Path:
    configured = os.environ.get("CAPBENCH_MODEL_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "capbench" / "models"
