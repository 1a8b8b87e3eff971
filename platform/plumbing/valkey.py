"""The one client of the Redis-compatible server (Valkey) that the platform shares between
processes: rate-limit counters, worker heartbeats, queue lengths and the health check. Django's
cache and Celery keep their own connections.

One client per process and address (it holds a connection pool, so threads share it): short
timeouts, because every caller has an answer for "unreachable" and none may hang a request."""

from __future__ import annotations

import functools

import redis
from django.conf import settings

TIMEOUT_SECONDS = 2


@functools.cache
def _client(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS)


def client(url: str | None = None) -> redis.Redis:
    """The shared client for `url` (default: REDIS_URL)."""
    return _client(url or settings.REDIS_URL)
