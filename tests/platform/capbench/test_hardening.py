"""Safe defaults: DEBUG off unless asked, static files without DEBUG, no media served by path,
production settings that pass `check --deploy`, a Content-Security-Policy everywhere with no inline
script in our pages, and secret-bearing pages never cached."""

from __future__ import annotations

import importlib
import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import clear_url_caches, reverse

from catalog.models import Item
from submissions.services import MethodInfo, submission_create

pytestmark = pytest.mark.django_db


def _settings_env(**extra: str) -> dict[str, str]:
    keep = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CAPBENCH_"))}
    return {**keep, **extra}


# DEBUG ----------------------------------------------------------------------------------------------


def test_local_settings_keep_debug_off_unless_asked(monkeypatch):
    import capbench.settings.local as local

    try:
        monkeypatch.delenv("DJANGO_DEBUG", raising=False)
        assert importlib.reload(local).DEBUG is False
        monkeypatch.setenv("DJANGO_DEBUG", "1")
        assert importlib.reload(local).DEBUG is True
    finally:
        monkeypatch.undo()
        importlib.reload(local)


def test_make_dev_is_make_run_with_debug(repo_root, monkeypatch):
    from capbench.run import _child_env

    dry_run = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "dev"], cwd=repo_root, capture_output=True, text=True, check=True
    ).stdout
    assert "DJANGO_DEBUG=1" in dry_run
    assert "-m capbench.run" in dry_run
    run_dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "run"], cwd=repo_root, capture_output=True, text=True, check=True
    ).stdout
    assert "DJANGO_DEBUG" not in run_dry
    monkeypatch.setenv("DJANGO_DEBUG", "1")  # what `make dev` sets reaches the web server and worker
    env = _child_env({"DATABASE_URL": "postgresql://x@/y", "REDIS_URL": "redis://z/0"}, Path("/tmp/state"))
    assert env["DJANGO_DEBUG"] == "1"
    assert env["DJANGO_SETTINGS_MODULE"] == "capbench.settings.local"


def test_static_files_are_served_without_debug(client, settings):
    assert settings.DEBUG is False
    for path, text in (
        ("/static/plotly/plotly.min.js", b"plotly"),
        ("/static/capbench.css", b"{"),
        ("/static/js/metric-charts.js", b"Plotly.newPlot"),
        ("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js", b"swagger"),
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert text in b"".join(response.streaming_content)[:4_000_000], path


# Media ----------------------------------------------------------------------------------------------


@pytest.fixture
def debug_urls(settings):
    """The URLconf as DEBUG=True would build it (django.conf.urls.static adds routes only then)."""
    import capbench.urls

    settings.DEBUG = True
    importlib.reload(capbench.urls)
    clear_url_caches()
    yield
    settings.DEBUG = False
    importlib.reload(capbench.urls)
    clear_url_caches()


def test_a_stored_submission_file_is_never_served_as_media(client, settings, demo_dataset, captioner, debug_urls):
    content = json.dumps(
        [
            {"image_id": item.external_id, "caption": "a private caption"}
            for item in Item.objects.filter(dataset=demo_dataset)
        ]
    ).encode()
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="mine.json",
        content=content,
        method=MethodInfo("Private"),
        is_public=False,
    )
    stored = Path(settings.MEDIA_ROOT) / submission.stored_file
    assert stored.read_bytes() == content
    for user in (None, captioner):  # not for a stranger, not even for its owner: there is no such route
        if user:
            client.force_login(user)
        response = client.get(f"/{settings.MEDIA_URL}{submission.stored_file}")
        assert response.status_code == 404
        assert b"a private caption" not in response.content


# Production -----------------------------------------------------------------------------------------


def test_production_settings_pass_the_deploy_check(repo_root):
    env = _settings_env(
        DJANGO_SETTINGS_MODULE="capbench.settings.production",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="capbench.example",
        DATABASE_URL=os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1/capbench"),
        REDIS_URL=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=repo_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output and "WARNING" not in output, output


@pytest.fixture
def production(monkeypatch):
    """Loads capbench.settings.production under the environment the test sets (a fresh module)."""
    monkeypatch.setenv("DJANGO_SECRET_KEY", secrets.token_urlsafe(64))
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", "capbench.example, www.capbench.example")
    for name in ("DJANGO_SECURE_SSL_REDIRECT", "DJANGO_SECURE_PROXY_SSL_HEADER", "DJANGO_SECURE_HSTS_PRELOAD"):
        monkeypatch.delenv(name, raising=False)

    def load():
        sys.modules.pop("capbench.settings.production", None)
        return importlib.import_module("capbench.settings.production")

    yield load
    sys.modules.pop("capbench.settings.production", None)


def test_production_is_https_only_with_safe_cookies(production, monkeypatch):
    settings = production()
    assert settings.DEBUG is False
    assert settings.ALLOWED_HOSTS == ["capbench.example", "www.capbench.example"]
    assert settings.SECURE_SSL_REDIRECT is True
    assert not hasattr(settings, "SECURE_PROXY_SSL_HEADER")
    assert settings.SECURE_HSTS_SECONDS >= 365 * 24 * 3600 and settings.SECURE_HSTS_INCLUDE_SUBDOMAINS
    assert settings.SECURE_HSTS_PRELOAD is False
    assert settings.SESSION_COOKIE_SECURE and settings.SESSION_COOKIE_HTTPONLY and settings.CSRF_COOKIE_SECURE
    assert settings.SESSION_COOKIE_SAMESITE == settings.CSRF_COOKIE_SAMESITE == "Lax"
    assert settings.X_FRAME_OPTIONS == "DENY"
    assert settings.SECURE_REFERRER_POLICY == "same-origin"

    # Behind a TLS-terminating proxy that redirects by itself and says which requests were secure.
    monkeypatch.setenv("DJANGO_SECURE_SSL_REDIRECT", "0")
    monkeypatch.setenv("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto")
    monkeypatch.setenv("DJANGO_SECURE_HSTS_PRELOAD", "1")
    settings = production()
    assert settings.SECURE_SSL_REDIRECT is False
    assert settings.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert settings.SECURE_HSTS_PRELOAD is True
    assert "security.W021" not in getattr(settings, "SILENCED_SYSTEM_CHECKS", [])


@pytest.mark.parametrize("missing", ["DJANGO_ALLOWED_HOSTS", "DJANGO_SECRET_KEY"])
def test_production_refuses_to_start_without_hosts_or_secret(production, monkeypatch, missing):
    monkeypatch.setenv(missing, " ")
    with pytest.raises(ImproperlyConfigured, match=missing):
        production()


# Content-Security-Policy ----------------------------------------------------------------------------

SCRIPT_TAG = re.compile(r"<script\b([^>]*)>", re.IGNORECASE)


def _inline_scripts(html: str) -> list[str]:
    """Every <script> that would run inline: no src, and not a json_script data element."""
    return [
        attrs for attrs in SCRIPT_TAG.findall(html) if "src=" not in attrs and 'type="application/json"' not in attrs
    ]


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_every_page_has_a_policy_without_inline_script(fresh_page_memory, client, demo_dataset, captioner):
    from scoring.services.planning import dataset_plan
    from tests.platform.scoring.inline import run_jobs

    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["rouge_l"]))
    content = json.dumps(
        [{"image_id": item.external_id, "caption": "a caption"} for item in Item.objects.filter(dataset=demo_dataset)]
    ).encode()
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=content,
        method=MethodInfo("Mine"),
        is_public=True,
    )
    client.force_login(captioner)
    pages = [
        "/",
        "/datasets/",
        f"/datasets/{demo_dataset.slug}/",
        "/metrics/",
        "/metrics/rouge_l/",
        "/submit/",
        f"/submissions/{submission.pk}/",
        "/submissions/mine/",
        "/api/v1/docs/",
        "/api/v1/datasets/?format=api",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        policy = _policy(response)
        # The metric page's WebGL scatter (regl) needs Function(): 'unsafe-eval' there, nowhere else.
        script_src = ["'self'", "'unsafe-eval'"] if path.startswith("/metrics/rouge_l/") else ["'self'"]
        assert policy["default-src"] == ["'self'"] and policy["script-src"] == script_src, path
        assert policy["object-src"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"], path
        assert policy["base-uri"] == ["'self'"] and policy["form-action"] == ["'self'"], path
        # Pictures from this site, and from the hosts dataset images are shown from (catalog/pictures.py).
        hosts = {f"{scheme}://{host}" for host in settings.CAPBENCH_MEDIA_HOSTS for scheme in ("http", "https")}
        assert set(policy["img-src"]) == {"'self'", "data:", "blob:", *hosts}, path
        assert _inline_scripts(response.content.decode()) == [], path
    detail = client.get(f"/submissions/{submission.pk}/").content.decode()
    progress_url = reverse("submissions:progress", args=[submission.pk])
    assert f'data-progress-url="{progress_url}"' in detail  # polled by static/js/submission-progress.js
    script = client.get("/api/v1/docs/?script=")  # Swagger UI's start-up script, served on its own
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/v1/schema/" in script.content.decode()


# Caching of secret-bearing pages ----------------------------------------------------------------------


def _never_cached(response) -> bool:
    directives = {part.strip() for part in response.get("Cache-Control", "").split(",")}
    return {"no-store", "no-cache", "private"} <= directives


def test_pages_that_carry_secrets_are_never_cached(client, captioner):
    assert _never_cached(client.get("/accounts/login/"))
    assert _never_cached(client.get("/accounts/signup/"))
    client.force_login(captioner)
    rotated = client.post("/accounts/token/")
    assert rotated.status_code == 302
    assert _never_cached(rotated)
    mine = client.get("/submissions/mine/")
    assert mine.status_code == 200
    assert _never_cached(mine)
    assert captioner.auth_token.key in mine.content.decode()  # the page that shows the token
