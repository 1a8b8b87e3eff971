"""What `make run` hands its worker and web server: SITE_URL names the address actually served
(`make run PORT=8102`), so citations, BibTeX, badges, mail and the campaign API's `url` point there,
unless CAPBENCH_SITE_URL is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from capbench.run import _child_env, served_url


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8102, "http://127.0.0.1:8102"),
        ("0.0.0.0", 8000, "http://127.0.0.1:8000"),
        ("localhost", 9000, "http://localhost:9000"),
        ("::1", 8102, "http://[::1]:8102"),
        ("[::]", 8102, "http://[::1]:8102"),
    ],
)
def test_the_served_address_as_a_browser_here_reaches_it(host, port, url):
    assert served_url(host, port) == url


def test_the_children_are_told_the_port_served_unless_the_site_url_is_set(monkeypatch, tmp_path):
    urls = {"DATABASE_URL": "postgresql://x/y", "REDIS_URL": "redis://x/0"}
    monkeypatch.delenv("CAPBENCH_SITE_URL", raising=False)
    assert _child_env(urls, tmp_path, ("127.0.0.1", 8102))["CAPBENCH_SITE_URL"] == "http://127.0.0.1:8102"
    monkeypatch.setenv("CAPBENCH_SITE_URL", "  ")  # empty counts as unset, as for every CAPBENCH_* variable
    assert _child_env(urls, tmp_path, ("127.0.0.1", 8102))["CAPBENCH_SITE_URL"] == "http://127.0.0.1:8102"
    monkeypatch.setenv("CAPBENCH_SITE_URL", "https://bench.example.org")
    assert _child_env(urls, tmp_path, ("127.0.0.1", 8102))["CAPBENCH_SITE_URL"] == "https://bench.example.org"


def test_links_made_by_the_served_settings_name_the_port(monkeypatch, tmp_path, repo_root: Path):
    """The settings `make run PORT=8102` starts its web server with: an absolute link (citations,
    badges, mail, the API's url all use catalog.citations.absolute or SITE_URL) on port 8102."""
    for name in [name for name in os.environ if name.startswith(("CAPBENCH_", "DJANGO_"))]:
        monkeypatch.delenv(name)
    env = _child_env({}, tmp_path, ("127.0.0.1", 8102))
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "from catalog.citations import absolute; print(settings.SITE_URL, absolute('/cite/'))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo_root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["http://127.0.0.1:8102", "http://127.0.0.1:8102/cite/"]
