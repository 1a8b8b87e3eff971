"""A real Celery worker process against the real broker answers a task."""

import os
import subprocess
import sys
import uuid

import pytest
from django.conf import settings

from capbench.celery import app, ping


@pytest.fixture
def worker(repo_root):
    queue = f"test-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "capbench.settings.test"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "capbench",
            "worker",
            "--queues",
            queue,
            "--concurrency",
            "1",
            "--pool",
            "solo",
            "--hostname",
            f"{queue}@%h",
            "--loglevel",
            "WARNING",
        ],
        env=env,
        cwd=repo_root,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    yield queue
    process.terminate()
    process.wait(timeout=20)


def test_worker_answers_over_the_real_broker(worker):
    assert settings.CELERY_BROKER_URL.startswith("redis://")
    result = ping.apply_async(queue=worker)
    assert result.get(timeout=60) == "pong"


def test_worker_settings_are_crash_safe():
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_always_eager is False
