"""Fixtures for platform tests: a small real dataset, users, and clean-up of this run's queues."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def _delete_this_runs_queues():
    """Tests enqueue real messages on queues named for this run; drop them at the end."""
    yield
    import redis
    from django.conf import settings

    from scoring.queues import all_queue_names

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(*all_queue_names())


@pytest.fixture(autouse=True)
def _fresh_rate_limits(settings):
    """Each test starts with no request counted against the abuse limits, and its own copy of the rates."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = list(client.scan_iter(f"{settings.CAPBENCH_QUEUE_PREFIX}limit:*", count=1000))
    if keys:
        client.delete(*keys)
    settings.CAPBENCH_RATES = dict(settings.CAPBENCH_RATES)


@pytest.fixture(autouse=True)
def _fresh_page_memory():
    """Each test starts with no kept board response or table, in this process or in Valkey: a flushed
    database starts its results revision again, so a table kept by an earlier test could match."""
    from django.core.cache import cache

    from leaderboards.caching import KEPT_HERE

    KEPT_HERE.clear()
    client = cache._cache.get_client()
    for pattern in ("board-response:", "fragment:", "comparison:"):
        keys = list(client.scan_iter(cache.make_key(pattern) + "*", count=1000))
        if keys:
            client.delete(*keys)


@pytest.fixture
def demo_dataset(repo_root: Path):
    """The 100-image Flickr8k-Expert slice the platform ships as its demo."""
    from catalog.importers.registry import read_bundle
    from catalog.services.imports import dataset_import

    bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
    return dataset_import(bundle=bundle, source_path="demo", slug="demo", title="Demo").dataset


@pytest.fixture
def captioner(django_user_model):
    return django_user_model.objects.create_user("captioner", password="a long test password")


@pytest.fixture
def workers(transactional_db, repo_root, tmp_path):
    """Start real Celery workers (on this run's queues and test database); all stopped at the end."""
    from tests.platform.scoring.workers import Workers

    pool = Workers(repo_root, tmp_path)
    yield pool
    pool.stop_all()
