"""Image embeddings on disk, keyed by (media content sha256, model fingerprint, preprocessing
version): a new submission on a known dataset encodes only its captions."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from capbench_eval import config
from capbench_eval.backbones.store import model_dir
from capbench_eval.files import atomic_path, file_sha256

_FILE_SHA: dict[tuple[str, int, int], str] = {}


def feature_dir() -> Path:
    return config.env.feature_dir or model_dir().parent / "features"


def media_sha256(path: str | Path) -> str:
    """Content hash of a media file, remembered per (path, size, mtime) in this process."""
    stat = os.stat(path)
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _FILE_SHA:
        _FILE_SHA[key] = file_sha256(path)
    return _FILE_SHA[key]


class FeatureCache:
    def __init__(self, model_key: str, root: Path | None = None):
        self.folder = (root or feature_dir()) / model_key
        self.hits = self.misses = 0

    def _path(self, sha: str) -> Path:
        return self.folder / sha[:2] / f"{sha}.npy"

    def get(self, sha: str) -> np.ndarray | None:
        path = self._path(sha)
        if path.is_file():
            self.hits += 1
            return np.load(path)
        self.misses += 1
        return None

    def put(self, sha: str, vector: np.ndarray) -> None:
        with atomic_path(self._path(sha), suffix=".npy") as partial:  # (np.save would add .npy to another name)
            np.save(partial, np.asarray(vector, dtype=np.float32))
