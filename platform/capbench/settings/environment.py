"""Reading configuration from the environment (no third-party parser needed)."""
from __future__ import annotations

import os
from urllib.parse import parse_qs, unquote, urlsplit

LOCAL_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/capbench"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return default if raw in (None, "") else int(raw)


def database_from_url(url: str) -> dict:
    """Django DATABASES entry from a postgres URL.

    Supports TCP (`postgresql://user:pw@host:5432/db`) and unix sockets given as a `host` query
    parameter (`postgresql://postgres@/capbench?host=/path/to/socket-dir`), which is what the
    embedded PostgreSQL hands out.
    """
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(f"DATABASE_URL must be a postgresql:// URL, got scheme {parts.scheme!r}")
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    host = unquote(parts.hostname or "") or query.pop("host", "")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parts.path.lstrip("/")) or "capbench",
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or ""),
        "OPTIONS": query,
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
