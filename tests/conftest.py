"""Shared test fixtures. The real human-judgment data lives at ../shared/data beside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

# model_store, pac_checkpoint, roberta_store, polos_store, llava_store, qwen_store, images; judge_server;
# vision_store (tiny SD, EVA, B/16 and Alpha-CLIPs, YOLO, Depth Anything, SAM, FACTUAL T5)
pytest_plugins = ["tests.fixtures.models", "tests.fixtures.judges", "tests.fixtures.vision"]

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    assert SHARED_DATA.is_dir(), f"the shared human-judgment data is expected at {SHARED_DATA}"
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
