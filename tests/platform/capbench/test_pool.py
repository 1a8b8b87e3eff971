"""The web process borrows database connections from a bounded pool: a hundred concurrent keep-alive
clients on the threaded server that `make run` starts (runserver --noreload, a thread per client)
get every page, and the server never holds more than CAPBENCH_DB_POOL_SIZE connections.

Before the pool (CONN_MAX_AGE=60), every server thread kept its own connection: the auditor saw 62
idle connections and "too many clients already" under ~100 clients."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from urllib.parse import urlsplit

import psycopg
import pytest
from django.conf import settings

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

POOL_SIZE = 8
CLIENTS = 100
APPLICATION = "capbench-pool-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _test_database_url() -> str:
    url = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + settings.DATABASES["default"]["NAME"])
    return url.geturl()


def _server_connections(cursor) -> tuple[int, int]:
    """(the server's connections, every connection to the test database)."""
    cursor.execute(
        "SELECT count(*) FILTER (WHERE application_name = %s), count(*) FROM pg_stat_activity "
        "WHERE datname = current_database()",
        [APPLICATION],
    )
    return cursor.fetchone()


@pytest.fixture
def server(repo_root, tmp_path, demo_dataset):
    """`manage.py runserver --noreload` (what make run starts) on the test database and a free port."""
    port = _free_port()
    database = _test_database_url()
    separator = "&" if urlsplit(database).query else "?"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "capbench.settings.test",
        "DATABASE_URL": f"{database}{separator}application_name={APPLICATION}",
        "CAPBENCH_QUEUE_PREFIX": settings.CAPBENCH_QUEUE_PREFIX,
        "CAPBENCH_DB_POOL": "1",
        "CAPBENCH_DB_POOL_SIZE": str(POOL_SIZE),
    }
    log = tmp_path / "runserver.log"
    process = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=repo_root,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, f"runserver did not answer: {log.read_text()[-3000:]}"
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                connection.request("GET", "/")
                if connection.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.2)
        yield port, log
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
        with psycopg.connect(_test_database_url(), autocommit=True) as admin:
            deadline = time.monotonic() + 10  # the server's connections end with it (the database is dropped later)
            while _server_connections(admin.cursor())[0] and time.monotonic() < deadline:
                time.sleep(0.1)


def test_a_hundred_keep_alive_clients_share_a_bounded_pool(server, demo_dataset):
    port, log = server
    paths = ["/", "/datasets/", f"/datasets/{demo_dataset.slug}/", "/api/v1/datasets/"]
    statuses: Counter = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    all_connected = threading.Barrier(CLIENTS, timeout=120)

    def client(number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        try:
            for offset in range(len(paths)):  # each page once, on the one keep-alive connection
                path = paths[(number + offset) % len(paths)]
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                with lock:
                    statuses[response.status] += 1
                if offset == 0:
                    all_connected.wait()  # every client now holds a connection, i.e. a server thread
        except Exception as error:  # noqa: BLE001  (connection refused, reset, timeout: all failures here)
            with lock:
                errors.append(f"client {number}: {type(error).__name__}: {error}")
            all_connected.abort()
        finally:
            connection.close()

    peaks = {"server": 0, "database": 0, "others": 0}
    sampling = threading.Event()

    def sample() -> None:
        with psycopg.connect(_test_database_url(), autocommit=True) as admin:
            cursor = admin.cursor()
            server_count, total = _server_connections(cursor)
            # Connections that are not the server's before the clients start: this process, the
            # sampler, and any an earlier test's live server still holds in a full run.
            peaks["others"] = total - server_count
            while not sampling.is_set():
                server_count, total = _server_connections(cursor)
                peaks["server"], peaks["database"] = max(peaks["server"], server_count), max(peaks["database"], total)
                time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    sampling.set()
    sampler.join()

    print(
        f"\n{CLIENTS} keep-alive clients, {sum(statuses.values())} requests in {elapsed:.1f} s: "
        f"statuses {dict(statuses)}; peak connections: server {peaks['server']} (pool size {POOL_SIZE}), "
        f"whole test database {peaks['database']}"
    )
    assert not errors, errors[:5]
    assert not [status for status in statuses if status >= 500], (dict(statuses), log.read_text()[-3000:])
    assert statuses[200] == CLIENTS * len(paths), dict(statuses)
    assert 1 <= peaks["server"] <= POOL_SIZE
    # the server's pool, plus what was there before (this test process, the sampler, ...) and one spare
    assert peaks["database"] <= POOL_SIZE + peaks["others"] + 1, peaks


def test_celery_workers_connect_per_task_without_the_pool(repo_root):
    """The worker's main process drops the pool before it starts (capbench.celery): Celery closes
    connections around every task anyway, and forked children must not inherit a pool's threads."""
    script = (
        "import django; django.setup(); from django.conf import settings; from celery.signals import worker_init; "
        "import capbench.celery; before = 'pool' in settings.DATABASES['default']['OPTIONS']; "
        "worker_init.send(sender=None); print(before, 'pool' in settings.DATABASES['default']['OPTIONS'])"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "capbench.settings.test", "CAPBENCH_DB_POOL": "1"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=repo_root, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.split() == ["True", "False"], result.stdout + result.stderr
