"""mypy with django-stubs passes (issue 15): the configuration is [tool.mypy] in pyproject.toml.

Importing the settings (django-stubs' plugin does) needs DATABASE_URL and REDIS_URL, which the
test session has. mypy runs in another process while the suite runs (tests/background.py): about a
minute and a half the first time, seconds once .mypy_cache/ holds the last run."""

from __future__ import annotations

import pytest

from tests.background import Job


@pytest.mark.background("mypy")
def test_mypy_passes(background: Job) -> None:
    result = background.result
    assert result is not None and result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"
    assert "Success: no issues found" in result.stdout, result.stdout
