"""The browser tests run against pytest-django's live server; the browser itself (Playwright driving
Debian's Chromium, watched for Content-Security-Policy violations) is tests/fixtures/browser.py's."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _live_server_connections_closed(django_db_setup, django_db_blocker):
    """The live server's thread may keep a database connection; end it before the test database is
    dropped at the end of the session (not earlier: a later test's connection would be ended too).
    This process's own pool is closed first, so its idle connections end cleanly."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        connection.close()
        if getattr(connection, "pool", None):
            connection.close_pool()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        connection.close()
