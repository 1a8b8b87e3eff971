"""mypy with django-stubs passes (issue 15): the configuration is [tool.mypy] in pyproject.toml.

Importing the settings (django-stubs' plugin does) needs DATABASE_URL and REDIS_URL, which the
test session has. The first run takes about a minute; later ones reuse .mypy_cache/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_passes() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", ".mypy_cache"],  # which files: [tool.mypy] files
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"mypy failed:\n{result.stdout}{result.stderr}"
