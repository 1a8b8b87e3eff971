#!/usr/bin/env python
"""Django's command-line entry point for CapBench.

`platform/` is deliberately not a Python package (the stdlib has a `platform` module); its apps
and `capbench_eval` (in evaluation/) are importable because `pip install -e .` (`make install`) installs them
(pyproject.toml maps each app to its folder under `platform/`).
"""

import logging
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
    if sys.argv[1:2] != ["runserver"]:
        # A command has one thread: a connection the pool cannot open now will not free up by waiting,
        # and the pool's retry warnings would bury the one line said below.
        os.environ.setdefault("CAPBENCH_DB_POOL_TIMEOUT", "3")
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
    from django.core.management import execute_from_command_line
    from django.db.utils import OperationalError

    try:
        execute_from_command_line(sys.argv)
    except OperationalError:  # one line with the fix, not a traceback
        sys.exit(
            f"cannot reach the database ({database_problem()}): start the platform with `make run` (these commands "
            "then use its embedded PostgreSQL) or set DATABASE_URL to a PostgreSQL you run"
        )


def database_problem() -> str:
    """Why the configured database does not answer, as PostgreSQL or the network says it (the pool
    reports only that it timed out)."""
    import psycopg
    from django.db import connection

    params = {key: value for key, value in connection.get_connection_params().items() if key != "cursor_factory"}
    try:
        psycopg.connect(**params, connect_timeout=5).close()
    except psycopg.Error as error:
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        return lines[0] if lines else type(error).__name__
    return "it answers now; try again"


if __name__ == "__main__":
    main()
