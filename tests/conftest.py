"""Shared test fixtures. The real human-judgment data is in tests/data/human-judgments/ (tests/judgment_data.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management.commands import flush as flush_command
from django.db import connections
from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations

from tests import judgment_data as judgment_files
from tests.judgment_data import ROOT
from tests.worlds import kept, superuser

# One thread per process for the numeric libraries (torch, OpenMP, OpenBLAS), set before the
# plugins below load them, and inherited by the workers, servers and commands the tests start:
# `make test` runs two pytest-xdist workers on two cores, and each library's thread per core then
# spin-waits on the other process's (a tiny-LLaVA judge test measured 137 s of CPU with the default
# threads, 28 s with one). numpy loads earlier still: the Makefile sets them for the whole run.
for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

# model_store, pac_checkpoint, roberta_store, polos_store, llava_store, qwen_store, images; judge_server;
# vision_store (tiny SD, EVA, B/16 and Alpha-CLIPs, YOLO, Depth Anything, SAM, FACTUAL T5); browser_page,
# page_problems, artefacts (Playwright on Debian's Chromium)
pytest_plugins = ["tests.fixtures.models", "tests.fixtures.judges", "tests.fixtures.vision", "tests.fixtures.browser"]


def _deleting_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
    """The test database emptied after each transactional test (288 of them) by DELETE with the
    triggers off (foreign-key checks included: every table is emptied), not TRUNCATE, which gives
    every table and index new files: teardown of a scored board took 0.5 s with TRUNCATE, 0.4 s with
    DELETE and its deferred key checks, 0.2 s so. Turning triggers off takes a superuser (this
    machine's, CI's and the embedded PostgreSQL's); anyone else gets TRUNCATE. Sequences are not
    reset, as TRUNCATE without RESTART IDENTITY leaves them. The content types and permissions that
    migrating made are kept, so the flush need not make them again (`_after_flush`: 0.14 of a 0.15 s
    teardown), and they keep their ids (tests/worlds.py keys a world by every row before it). The
    statements go as one."""
    if reset_sequences or allow_cascade or not tables or not superuser(self.connection):
        self.connection.capbench_kept_migrated_rows = False
        return _truncating_flush(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
    self.connection.capbench_kept_migrated_rows = True
    deletes = [
        f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};"
        for table in tables
        if table not in MIGRATED_ROWS
    ]
    return ["\n".join(["SET LOCAL session_replication_role = replica;", *deletes])]


# The tables whose rows post_migrate makes (contenttypes' and auth's receivers, the only ones).
MIGRATED_ROWS = {"django_content_type", "auth_permission"}


def _after_flush(verbosity, interactive, database, **kwargs) -> None:
    """post_migrate after a flush, unless the flush kept what it would make."""
    if not getattr(connections[database], "capbench_kept_migrated_rows", False):
        _emit_post_migrate(verbosity, interactive, database, **kwargs)


_truncating_flush = PostgresOperations.sql_flush
PostgresOperations.sql_flush = _deleting_flush  # type: ignore[method-assign]
_emit_post_migrate = flush_command.emit_post_migrate_signal
flush_command.emit_post_migrate_signal = _after_flush


@pytest.hookimpl(tryfirst=True)  # before pytest-django's, whose stable sort then puts transactional tests last
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules holding slow tests first, each module's tests kept together and in order: the
    workers then start on the minutes-long oracles, reproductions and crawls and fill the rest of
    the run with the quick tests, instead of one worker finishing a long test alone at the end."""
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_modules)  # a stable sort


@pytest.fixture(scope="session")
def judgment_data() -> Path:
    """The decompressed human-judgment files: flickr8k/, pascal50s/, msvd_eval/."""
    return judgment_files.judgment_data()


@pytest.fixture(scope="session")
def meteor_index() -> Path:
    """The index of METEOR's paraphrase table, built if this machine has none (25 s, once): METEOR's
    JVMs then start on each batch's cut of the table (capbench_eval/metrics/ngram/paraphrases.py)."""
    from capbench_eval.metrics.ngram.paraphrases import build_index  # (loads the metric registry)

    return build_index()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


# The platform's fixtures that the client's end-to-end test (tests/client/test_live.py) shares.


@pytest.fixture
def demo_dataset(repo_root: Path):
    """The 100-image Flickr8k-Expert slice the platform ships as its demo (imported once per process
    and copied back after: tests/worlds.py)."""
    from catalog.importers.registry import read_bundle
    from catalog.services.imports import dataset_import

    def imported():
        bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
        return dataset_import(bundle=bundle, source_path="demo", slug="demo", title="Demo").dataset

    return kept("demo", imported)


@pytest.fixture(scope="session")
def this_runs_queues():
    """Tests enqueue real messages on queues named for this run; dropped at the end of the session."""
    yield
    import redis
    from django.conf import settings

    from scoring.queues import all_queue_names

    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(*all_queue_names())


@pytest.fixture
def workers(this_runs_queues, transactional_db, repo_root, tmp_path):
    """Start real Celery workers (on this run's queues and test database); all stopped at the end."""
    from tests.platform.scoring.workers import Workers

    pool = Workers(repo_root, tmp_path)
    yield pool
    pool.stop_all()


@pytest.fixture
def fresh_rate_limits(settings):
    """No request counted against the abuse limits yet, and the test's own copy of the rates: for a
    test that lowers a rate (`settings.CAPBENCH_RATES["signup"] = "2/hour"`) or counts hits."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(client.scan_iter(f"{settings.CAPBENCH_QUEUE_PREFIX}limit:*", count=1000))
    if keys:
        client.delete(*keys)
    settings.CAPBENCH_RATES = dict(settings.CAPBENCH_RATES)


@pytest.fixture
def fresh_page_memory():
    """No kept board response, table, comparison or people's agreement, in this process or in
    Valkey: for a test that reads boards, the metric pages, the home page or a comparison. A flushed
    database starts its results revision again, and a kept world (tests/worlds.py) gives the demo
    dataset the same id and content fingerprint in every test, so what an earlier test kept could
    match. Called, it forgets them again (a test comparing pages before and after a change that must
    not show)."""
    from django.core.cache import cache

    from leaderboards.caching import KEPT_HERE

    def forget() -> None:
        KEPT_HERE.clear()
        client = cache._cache.get_client()
        for pattern in ("board-response:", "fragment:", "comparison:", "people-agreement:"):
            keys = list(client.scan_iter(cache.make_key(pattern) + "*", count=1000))
            if keys:
                client.delete(*keys)

    forget()
    return forget


@pytest.fixture(scope="session")
def live_server_connections_closed(django_db_setup, django_db_blocker):
    """For tests on pytest-django's live server: its thread may keep a database connection; end it
    before the test database is dropped at the end of the session (not earlier: a later test's
    connection would be ended too). This process's own pool is closed first, so its idle
    connections end cleanly."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        connection.close()
        if getattr(connection, "pool", None):
            connection.close_pool()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        connection.close()
