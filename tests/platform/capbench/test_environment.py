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
    assert (pool["min_size"], pool["max_size"]) == (1, 5)
    assert 0 < pool["timeout"] <= 30
    monkeypatch.setenv("CAPBENCH_DB_POOL", "0")
    assert "pool" not in database_from_url("postgresql://postgres@127.0.0.1/capbench")["OPTIONS"]


def test_other_schemes_are_refused():
    with pytest.raises(ValueError, match="postgresql://"):
        database_from_url("sqlite:///db.sqlite3")


def test_commands_find_the_services_of_the_running_platform(tmp_path):
    import os
    import subprocess
    import sys

    from capbench.settings.environment import running_services, services_record

    assert running_services(tmp_path) == {}  # nothing runs
    urls = {"DATABASE_URL": "postgresql://postgres@/capbench?host=/x", "REDIS_URL": "redis://127.0.0.1:16379/0"}
    path = services_record(tmp_path, urls)
    assert running_services(tmp_path) == urls
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path.write_text(path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {gone.stdout.strip()}'))
    assert running_services(tmp_path) == {}  # left by a run that was killed: its process is gone
    path.write_text("{not json")
    assert running_services(tmp_path) == {}


def test_django_variables_are_parsed_strictly_and_named_when_wrong(monkeypatch):
    from capbench.settings.environment import env_bool, env_int, env_str
    from capbench_eval.config import ConfigError

    monkeypatch.setenv("DJANGO_SECURE_SSL_REDIRECT", "flase")
    with pytest.raises(ConfigError, match="DJANGO_SECURE_SSL_REDIRECT='flase' is not valid"):
        env_bool("DJANGO_SECURE_SSL_REDIRECT", True)  # a typo never turns the redirect off
    monkeypatch.setenv("DJANGO_SECURE_SSL_REDIRECT", " off ")
    assert env_bool("DJANGO_SECURE_SSL_REDIRECT", True) is False
    monkeypatch.setenv("DJANGO_SECURE_HSTS_SECONDS", "a year")
    with pytest.raises(ConfigError, match="DJANGO_SECURE_HSTS_SECONDS"):
        env_int("DJANGO_SECURE_HSTS_SECONDS", 1)
    monkeypatch.setenv("DATABASE_URL", "  ")
    assert env_str("DATABASE_URL", "postgresql://default") == "postgresql://default"  # empty: unset
