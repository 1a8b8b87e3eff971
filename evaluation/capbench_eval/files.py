"""Writing files so readers never see half of one, and hashing them."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(target: Path, suffix: str = "") -> Iterator[Path]:
    """A fresh temporary path beside `target` (ending in `suffix`, for writers that add their own)
    to write to; moved onto `target` in one step when the block ends, removed if it raises."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}{suffix}")
    try:
        yield partial
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def atomic_write_bytes(target: Path, data: bytes, suffix: str = "") -> None:
    with atomic_path(target, suffix) as partial:
        partial.write_bytes(data)


def atomic_write_text(target: Path, text: str, encoding: str = "utf-8", suffix: str = "") -> None:
    with atomic_path(target, suffix) as partial:
        partial.write_text(text, encoding=encoding)


def file_sha256(path: str | Path) -> str:
    """The file's sha256 (hex), read in blocks."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
