"""How mail leaves (CAPBENCH_EMAIL_URL) and what its links start with (CAPBENCH_SITE_URL): printed
on the console under `make run`, nothing sent in production until a server is named, and a
malformed value stops the settings naming the variable but never showing the password."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import pytest

from capbench.settings.mail import mail_transport, sender, site_url, site_url_from_hosts
from capbench_eval.config import ConfigError

SMTP = "django.core.mail.backends.smtp.EmailBackend"
NAMES = ["EMAIL_BACKEND", "SITE_URL", "DEFAULT_FROM_EMAIL", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_USE_TLS"]


def test_smtp_with_starttls_by_default_and_percent_encoded_credentials():
    mail = mail_transport("smtp://mailer%40capbench.example:p%40ss%2Fw0rd@smtp.example.org")
    assert (mail.backend, mail.host, mail.port) == (SMTP, "smtp.example.org", 587)
    assert (mail.user, mail.password) == ("mailer@capbench.example", "p@ss/w0rd")
    assert mail.use_tls and not mail.use_ssl
    assert "p@ss" not in repr(mail)
    relay = mail_transport("smtp://relay.internal:25?starttls=off")
    assert (relay.port, relay.use_tls, relay.user) == (25, False, "")


def test_smtps_console_file_and_none():
    tls = mail_transport("smtps://u:p@smtp.example.org")
    assert (tls.port, tls.use_ssl, tls.use_tls) == (465, True, False)
    assert mail_transport("console:").backend == "django.core.mail.backends.console.EmailBackend"
    assert mail_transport("none:").backend == "django.core.mail.backends.dummy.EmailBackend"
    folder = mail_transport("file:///var/capbench/mail")
    assert folder.backend == "django.core.mail.backends.filebased.EmailBackend"
    assert folder.file_path == "/var/capbench/mail"


@pytest.mark.parametrize(
    "url", ["smtp://user:s3cret@", "http://user:s3cret@smtp.example.org", "smtp://user:s3cret@host:99999", "file:"]
)
def test_a_malformed_mail_url_names_the_variable_and_hides_its_value(url):
    with pytest.raises(ConfigError, match="CAPBENCH_EMAIL_URL") as raised:
        mail_transport(url)
    assert "s3cret" not in str(raised.value)


def test_the_site_url_is_an_address_without_a_trailing_slash():
    assert site_url("https://capbench.example/") == "https://capbench.example"
    assert site_url("http://127.0.0.1:8001/bench/") == "http://127.0.0.1:8001/bench"
    for bad in ("capbench.example", "ftp://capbench.example", "https://capbench.example/?a=1", "https://"):
        with pytest.raises(ConfigError, match="CAPBENCH_SITE_URL"):
            site_url(bad)
    assert site_url_from_hosts(["capbench.example", "www.capbench.example"]) == "https://capbench.example"
    with pytest.raises(ConfigError, match="CAPBENCH_SITE_URL must be set"):
        site_url_from_hosts([".capbench.example"])
    assert sender("https://capbench.example", None) == "CapBench <noreply@capbench.example>"
    assert sender("https://capbench.example", "Bench <bench@example.org>") == "Bench <bench@example.org>"


def settings_of(repo_root, module: str, extra: dict[str, str]) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CAPBENCH_", "DJANGO_"))}
    env.update(extra, DJANGO_SETTINGS_MODULE=module)
    code = f"import json, django.conf as c; print(json.dumps({{n: getattr(c.settings, n) for n in {NAMES!r}}}))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo_root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_make_run_prints_mail_and_production_sends_none_until_a_server_is_named(repo_root):
    local = settings_of(repo_root, "capbench.settings.local", {})
    assert local["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend"
    assert local["SITE_URL"] == "http://127.0.0.1:8000"
    production_env = {"DJANGO_SECRET_KEY": secrets.token_urlsafe(64), "DJANGO_ALLOWED_HOSTS": "capbench.example"}
    production = settings_of(repo_root, "capbench.settings.production", production_env)
    assert production["EMAIL_BACKEND"] == "django.core.mail.backends.dummy.EmailBackend"
    assert production["SITE_URL"] == "https://capbench.example"
    assert production["DEFAULT_FROM_EMAIL"] == "CapBench <noreply@capbench.example>"
    configured = settings_of(
        repo_root,
        "capbench.settings.production",
        {
            **production_env,
            "CAPBENCH_EMAIL_URL": "smtp://u:p@smtp.example.org:2525",
            "CAPBENCH_SITE_URL": "https://bench.example.org",
            "CAPBENCH_EMAIL_FROM": "bench@example.org",
        },
    )
    assert (configured["EMAIL_BACKEND"], configured["EMAIL_HOST"], configured["EMAIL_PORT"]) == (
        SMTP,
        "smtp.example.org",
        2525,
    )
    assert configured["EMAIL_USE_TLS"] is True
    assert configured["SITE_URL"] == "https://bench.example.org"
    assert configured["DEFAULT_FROM_EMAIL"] == "bench@example.org"
