"""The client's tests keep its configuration in the test's own folder. The end-to-end test
(test_live.py) uses the platform's fixtures, re-exported here: the demo dataset and real workers
(tests/platform/conftest.py); it imports the autouse ones it needs itself, so that the tests that
need no server need no database either."""

from __future__ import annotations

import pytest

from tests.platform.conftest import demo_dataset, workers  # noqa: F401


@pytest.fixture(autouse=True)
def _own_client_config(tmp_path, monkeypatch):
    """No test reads or writes the user's own saved token, nor takes a server or token from the environment."""
    monkeypatch.setenv("CAPBENCH_CONFIG_DIR", str(tmp_path / "capbench-config"))
    monkeypatch.delenv("CAPBENCH_URL", raising=False)
    monkeypatch.delenv("CAPBENCH_TOKEN", raising=False)
