"""The test suite: real PostgreSQL and Redis (DATABASE_URL / REDIS_URL), never SQLite or mocks."""

import os

from capbench.settings.base import *  # noqa: F401,F403
from capbench.settings.base import CACHE_OPTIONS, REDIS_URL, STATE_DIR

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# pytest-xdist's workers (gw0, gw1, …) each keep their own file store beside their own test database,
# so what a test finds there is its worker's; the processes a test starts inherit the variable.
MEDIA_ROOT = STATE_DIR / "test-media" / os.environ.get("PYTEST_XDIST_WORKER", "")
# Tests render pages without running collectstatic first: plain names (make run's test checks the hashed ones).
STORAGES = {
    **STORAGES,  # noqa: F405  (the default storage as configured: a folder, or a bucket)
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Each test run has its own queues on the shared Redis (workers started by tests get the same prefix).
from capbench.settings.variables import Platform, env  # noqa: E402

CAPBENCH_QUEUE_PREFIX = env.queue_prefix or f"test{os.getpid()}-"
CELERY_TASK_DEFAULT_QUEUE = f"{CAPBENCH_QUEUE_PREFIX}cpu"
CAPBENCH_RETRY_BACKOFF = 0
# Workers started by tests warm up only when a test asks (each would start a METEOR JVM on these few cores).
CAPBENCH_WORKER_WARMUP = Platform.worker_warmup.raw() is not None and env.worker_warmup
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CAPBENCH_QUEUE_PREFIX,
        "OPTIONS": CACHE_OPTIONS,
    }
}
# The abuse limits stay on, with rates no ordinary test reaches; the limit tests start from zero
# (the fresh_rate_limits fixture in tests/conftest.py) and set the rates they measure.
CAPBENCH_RATES = dict.fromkeys(CAPBENCH_RATES, "1000000/min")  # noqa: F405
