"""Shared test fixtures. The real human-judgment data is in tests/data/human-judgments/ (tests/judgment_data.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests import judgment_data as judgment_files
from tests.background import ROOT, Background, Job

# model_store, pac_checkpoint, roberta_store, polos_store, llava_store, qwen_store, images; judge_server;
# vision_store (tiny SD, EVA, B/16 and Alpha-CLIPs, YOLO, Depth Anything, SAM, FACTUAL T5); browser_page,
# page_problems, artefacts (Playwright on Debian's Chromium)
pytest_plugins = ["tests.fixtures.models", "tests.fixtures.judges", "tests.fixtures.vision", "tests.fixtures.browser"]


@pytest.fixture(scope="session")
def judgment_data() -> Path:
    """The decompressed human-judgment files: flickr8k/, pascal50s/, msvd_eval/."""
    return judgment_files.judgment_data()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "background(name): the test reads a job of tests/background.py, started when collection ends; it runs last",
    )


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests waiting on background work run last (in their order otherwise), so the work is done by then."""
    items.sort(key=lambda item: item.get_closest_marker("background") is not None)


def pytest_collection_finish(session: pytest.Session) -> None:
    names = [marker.args[0] for item in session.items for marker in item.iter_markers("background")]
    if names and not session.config.option.collectonly:
        folder = Path(tempfile.mkdtemp(prefix="capbench-background-"))
        session.config.stash[_BACKGROUND] = Background(list(dict.fromkeys(names)), folder)


def pytest_sessionfinish(session: pytest.Session) -> None:
    started = session.config.stash.get(_BACKGROUND, None)
    if started is not None:
        started.close()


_BACKGROUND = pytest.StashKey[Background]()


@pytest.fixture
def background(request: pytest.FixtureRequest) -> Job:
    """The finished background job this test is marked for (its process result and output file)."""
    marker = request.node.get_closest_marker("background")
    assert marker is not None, "mark the test @pytest.mark.background(name)"
    started = request.config.stash.get(_BACKGROUND, None)
    assert started is not None, "no background job was started in this session (collected with --collect-only?)"
    return started.wait(marker.args[0])
