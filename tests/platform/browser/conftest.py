"""The browser tests run against pytest-django's live server; the browser itself (Playwright driving
Debian's Chromium, watched for Content-Security-Policy violations) is tests/fixtures/browser.py's.
Every test here uses the live server and reads pages: the fixtures below apply tests/conftest.py's
live_server_connections_closed and fresh_page_memory to each."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _live_server_connections_closed(live_server_connections_closed):
    pass


@pytest.fixture(autouse=True)
def _fresh_page_memory(fresh_page_memory):
    pass
