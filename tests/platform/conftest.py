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


# A 1x1 grey PNG: what every demo image is stored as where a test needs pictures to be shown.
TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c636800000082008177cd72b60000000049454e44ae426082"
)


@pytest.fixture
def store_pictures(tmp_path):
    """A function that stores a picture for each image of a dataset (datasets import without their
    files), in the file store as configured: campaigns give annotators only captions whose picture
    can be shown (campaigns/pictures.py)."""
    import hashlib

    from django.utils import timezone

    from catalog.models import Media
    from plumbing import storage

    def store(dataset) -> None:
        picture = tmp_path / "picture.png"
        picture.write_bytes(TINY_PNG)
        sha256 = hashlib.sha256(TINY_PNG).hexdigest()
        stored = storage.put_path(f"{sha256[:2]}/{sha256}.png", picture)
        Media.objects.filter(dataset=dataset).update(
            sha256=sha256, size_bytes=len(TINY_PNG), stored_path=stored, attached_at=timezone.now()
        )

    return store


@pytest.fixture
def demo_pictures(demo_dataset, store_pictures, settings, tmp_path):
    """The demo dataset with a stored picture for each of its images (the demo ships without them)."""
    settings.MEDIA_ROOT = tmp_path / "media-store"
    store_pictures(demo_dataset)
    return demo_dataset


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


@pytest.fixture
def scored_submission():
    """Makes a public submission whose captions are each image's reference number `reference`,
    planned for `metrics` and run in this process: `scored_submission(owner, dataset, metrics)`."""
    import json

    from catalog.models import Item
    from scoring.models import EvaluationJob
    from submissions.services import MethodInfo, submission_create, submission_plan
    from tests.platform.scoring.inline import run_jobs

    def make(owner, dataset, metrics: list[str], *, reference: int = 0, method: str = "Scored"):
        entries = [
            {"image_id": item.external_id, "caption": item.references[reference]}
            for item in Item.objects.filter(dataset=dataset)
        ]
        submission = submission_create(
            owner=owner,
            dataset=dataset,
            file_name="results.json",
            content=json.dumps(entries).encode(),
            method=MethodInfo(method),
            metrics=metrics,
            is_public=True,
        )
        submission_plan(submission_id=submission.pk)
        run_jobs(EvaluationJob.objects.filter(system=submission.system))
        submission.refresh_from_db()
        return submission

    return make
