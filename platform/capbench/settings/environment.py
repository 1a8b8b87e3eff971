"""Reading configuration from the environment (DATABASE_URL through dj-database-url)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import dj_database_url

from capbench.settings.variables import env
from capbench_eval.config import BOOL, INT, Kind
from capbench_eval.files import atomic_path

T = TypeVar("T")
LOCAL_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/capbench"
LOCAL_REDIS_URL = "redis://127.0.0.1:6379/0"
POSTGRES_SCHEMES = {"postgres", "postgresql", "pgsql"}
SERVICES_FILE = "services.json"  # in the state directory while `make run` runs: its embedded services' URLs


def running_services(state_dir: Path) -> dict[str, str]:
    """DATABASE_URL and REDIS_URL of the platform `make run` is serving from this state directory,
    so that `python manage.py …` in another terminal acts on the same data; empty when none runs
    (no file, or one left by a run that was killed: its process is gone)."""
    try:
        recorded = json.loads((state_dir / SERVICES_FILE).read_text())
        os.kill(int(recorded["pid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return {key: str(recorded[key]) for key in ("DATABASE_URL", "REDIS_URL") if recorded.get(key)}


def services_record(state_dir: Path, urls: dict[str, str]) -> Path:
    """Write the running platform's service URLs for `running_services` (private to the owner)."""
    path = state_dir / SERVICES_FILE
    with atomic_path(path) as partial:
        partial.write_text(json.dumps({"pid": os.getpid(), **urls}))
        partial.chmod(0o600)
    return path


def env_str(name: str, default: str) -> str:
    """A DJANGO_* / URL variable; empty counts as unset (as for every CAPBENCH_* variable)."""
    return os.environ.get(name, "").strip() or default


def env_bool(name: str, default: bool) -> bool:
    """1/0, true/false, yes/no, on/off; anything else stops the settings naming the variable (a
    mistyped "flase" must not turn a security setting off)."""
    return _parsed(name, BOOL, default)


def env_int(name: str, default: int) -> int:
    return _parsed(name, INT, default)


def _parsed(name: str, kind: Kind[T], default: T) -> T:
    raw = os.environ.get(name, "").strip()
    return kind.parse(name, raw) if raw else default


def database_from_url(url: str) -> dict:
    """Django DATABASES entry from a postgres URL, parsed by dj-database-url.

    Supports TCP (`postgresql://user:pw@host:5432/db`) and unix sockets given as a `host` query
    parameter (`postgresql://postgres@/capbench?host=/path/to/socket-dir`), which is what the
    embedded PostgreSQL hands out. Other query parameters are libpq options (`sslmode`,
    `application_name`, ...).

    Connections come from a bounded psycopg pool per process (CAPBENCH_DB_POOL_SIZE, default 8):
    a request thread borrows one for the request and gives it back at the end, and a thread that
    finds every connection lent waits up to CAPBENCH_DB_POOL_TIMEOUT seconds. Without a pool,
    every thread of a thread-per-connection server (runserver, keep-alive clients) kept its own
    connection open for CONN_MAX_AGE and a hundred clients exhausted PostgreSQL's max_connections.
    CAPBENCH_DB_POOL=0 turns the pool off (one connection per request, closed at its end).
    """
    try:
        parts = urlsplit(url)
        scheme, _ = parts.scheme, parts.port  # .port: a port that is not a number, said plainly
    except ValueError as error:
        raise ValueError(f"DATABASE_URL is not a valid postgresql:// URL: {error}") from None
    if scheme not in POSTGRES_SCHEMES:
        raise ValueError(f"DATABASE_URL must be a postgresql:// URL, got scheme {scheme!r}")
    try:
        # Django's pool requires CONN_MAX_AGE = 0: the pool, not the thread, keeps connections.
        # With the pool each connection is checked before it is lent (Django passes the pool's
        # check_connection); one closed by a restarted server is replaced, not handed to a request.
        database: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True))
    except ValueError as error:  # the address itself is not kept: it may carry a password
        raise ValueError(f"DATABASE_URL is not a valid postgresql:// URL: {error}") from None
    options = dict(database.get("OPTIONS", {}))
    # The embedded PostgreSQL's unix socket comes as ?host=; a host in the address itself wins.
    socket_dir = options.pop("host", "")
    database["HOST"] = database.get("HOST") or str(socket_dir)
    database["PORT"] = str(database.get("PORT") or "")
    database["NAME"] = database.get("NAME") or "capbench"
    if env.db_pool:
        options["pool"] = database_pool_options()
    database["OPTIONS"] = options
    return database


def database_pool_options() -> dict:
    """psycopg_pool.ConnectionPool arguments: at most CAPBENCH_DB_POOL_SIZE connections per process."""
    max_size = env.db_pool_size
    if max_size < 1:
        raise ValueError(f"CAPBENCH_DB_POOL_SIZE must be at least 1, got {max_size}")
    return {
        "min_size": min(env.db_pool_min_size, max_size),
        "max_size": max_size,
        # Seconds a request waits for a free connection before it fails (a 500, never a hang).
        "timeout": float(env.db_pool_timeout),
        # Idle connections above min_size are closed after this many seconds.
        "max_idle": float(env.db_pool_max_idle),
    }
