"""Versioned prompt files (prompts/README.md): the text, and its sha256 for the metric's config."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "prompts"


@functools.lru_cache(maxsize=64)
def prompt_text(name: str) -> str:
    return (FOLDER / name).read_text(encoding="utf-8")


def prompt_sha(name: str) -> str:
    return hashlib.sha256(prompt_text(name).encode()).hexdigest()[:16]


def fill(name: str, **values: str) -> str:
    """The prompt with each `{{Key}}` replaced; every key given must occur in the file."""
    text = prompt_text(name)
    for key, value in values.items():
        placeholder = "{{" + key + "}}"
        if placeholder not in text:
            raise KeyError(f"{name} has no {placeholder}")
        text = text.replace(placeholder, value)
    return text
