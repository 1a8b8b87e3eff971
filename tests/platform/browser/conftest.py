"""A real browser (Playwright driving Debian's Chromium) for the browser tests. Every page it opens
is watched for Content-Security-Policy violations and uncaught script errors: a test fails on any."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

# Runs before any page script (added by the browser, so the page's CSP does not apply to it).
_REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", event => {
  window.__cspViolation(`${event.effectiveDirective} blocked ${event.blockedURI || "inline"} `
                        + `at ${event.sourceFile}:${event.lineNumber} on ${document.location.pathname}`);
});
"""


@pytest.fixture
def artefacts(repo_root: Path) -> Path:
    folder = Path(os.environ.get("CAPBENCH_TEST_ARTIFACTS", repo_root / "test-artifacts")) / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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


@pytest.fixture
def page_problems() -> dict[str, list[str]]:
    """What the browser reported: CSP violations, uncaught errors and console errors."""
    return {"csp": [], "errors": [], "console": []}


@pytest.fixture
def browser_page(page_problems):
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API keeps a loop in this thread
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), "Debian's chromium is needed: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.expose_function("__cspViolation", lambda text: page_problems["csp"].append(text))
        page.add_init_script(_REPORT_VIOLATIONS)
        page.on("pageerror", lambda error: page_problems["errors"].append(f"{page.url}: {error}"))
        page.on(
            "console",
            lambda message: message.type == "error" and page_problems["console"].append(f"{page.url}: {message.text}"),
        )
        yield page
        browser.close()
    assert not page_problems["csp"], f"Content-Security-Policy violations: {page_problems['csp']}"
    assert not page_problems["errors"], f"uncaught script errors: {page_problems['errors']}"
    refused = [text for text in page_problems["console"] if "Content Security Policy" in text]
    assert not refused, f"the console reports Content-Security-Policy refusals: {refused}"
