"""The client's tests keep its configuration in the test's own folder. The end-to-end test
(test_live.py) uses the platform's fixtures that tests/conftest.py shares (the demo dataset, real
workers, the live server's clean-up); the tests that need no server need no database."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_client_config(tmp_path, monkeypatch):
    """No test reads or writes the user's own saved token, nor takes a server or token from the environment."""
    monkeypatch.setenv("CAPBENCH_CONFIG_DIR", str(tmp_path / "capbench-config"))
    monkeypatch.delenv("CAPBENCH_URL", raising=False)
    monkeypatch.delenv("CAPBENCH_TOKEN", raising=False)
