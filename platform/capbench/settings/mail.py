"""How the platform sends e-mail, and the address its links point to (docs/email.md).

Mail leaves through one of Django's backends, named by a single URL (CAPBENCH_EMAIL_URL), so that a
deployment sets one secret rather than six variables:

  smtp://USER:PASSWORD@HOST[:PORT]   SMTP with STARTTLS (port 587 unless given); `?starttls=off` only
                                     for a relay on a private network that offers no TLS
  smtps://USER:PASSWORD@HOST[:PORT]  SMTP over TLS from the first byte (port 465 unless given)
  console:                           printed on the process's standard output (`make run`'s default)
  file:///FOLDER                     one file per message in FOLDER
  none:                              nothing sent (production's default until a server is set)

User name and password are percent-encoded in the URL (`@` is `%40`). A malformed URL stops the
settings with the variable's name, never its value (it holds a password).

Links in mail cannot come from the request (a background worker sends them, and a forged Host
header must not pick the domain of a password-reset link): they start with SITE_URL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

from capbench_eval.config import ConfigError

BACKENDS = {
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "smtps": "django.core.mail.backends.smtp.EmailBackend",
    "console": "django.core.mail.backends.console.EmailBackend",
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "none": "django.core.mail.backends.dummy.EmailBackend",
}
SMTP_PORTS = {"smtp": 587, "smtps": 465}
OFF = {"0", "off", "false", "no"}


@dataclass(frozen=True)
class Mail:
    """The Django settings one CAPBENCH_EMAIL_URL stands for."""

    backend: str
    host: str = "localhost"
    port: int = 25
    user: str = ""
    password: str = field(default="", repr=False)
    use_tls: bool = False
    use_ssl: bool = False
    file_path: str | None = None


def mail_transport(url: str, name: str = "CAPBENCH_EMAIL_URL") -> Mail:
    """The backend and its connection settings from the URL (module docstring)."""
    try:
        parts = urlsplit(url.strip())
        scheme, port = parts.scheme.lower(), parts.port
    except ValueError:
        raise ConfigError(f"{name} is not a valid URL (its value is not shown: it may hold a password)") from None
    if scheme not in BACKENDS:
        raise ConfigError(
            f"{name} has scheme {scheme!r}: expected smtp://, smtps://, console:, file:///folder or none:"
        )
    if scheme == "file":
        if not parts.path:
            raise ConfigError(f"{name}: a file: URL names a folder (file:///var/capbench/mail)")
        return Mail(BACKENDS[scheme], file_path=unquote(parts.path))
    if scheme not in SMTP_PORTS:
        return Mail(BACKENDS[scheme])
    if not parts.hostname:
        raise ConfigError(f"{name}: an {scheme}:// URL names the mail server's host")
    query = parse_qs(parts.query)
    starttls = scheme == "smtp" and query.get("starttls", ["on"])[-1].lower() not in OFF
    return Mail(
        BACKENDS[scheme],
        host=parts.hostname,
        port=port or SMTP_PORTS[scheme],
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        use_tls=starttls,
        use_ssl=scheme == "smtps",
    )


def site_url(url: str, name: str = "CAPBENCH_SITE_URL") -> str:
    """`https://host[:port][/prefix]` without a trailing slash: what links in mail start with."""
    try:
        parts = urlsplit(url.strip())
        _ = parts.port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"{name}={url!r} is not valid: expected the site's address, such as https://capbench.example")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


def site_url_from_hosts(hosts: list[str]) -> str:
    """https:// and the first host the site answers to (production's default), when that is one name."""
    first = hosts[0].strip() if hosts else ""
    if not first or first.startswith(".") or "*" in first:
        raise ConfigError(
            "CAPBENCH_SITE_URL must be set when the first of DJANGO_ALLOWED_HOSTS is not one host name "
            f"({first!r}): links in e-mail start with it"
        )
    return f"https://{first}"


def sender(site: str, configured: str | None) -> str:
    """The From address: as configured, else `CapBench <noreply@HOST>` with the site's host name."""
    return configured or f"CapBench <noreply@{urlsplit(site).hostname}>"
