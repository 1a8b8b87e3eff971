"""Where tasks go. Queue names carry a prefix (CAPBENCH_QUEUE_PREFIX) so test runs and a local
`make run` sharing one Redis never take each other's work."""

from __future__ import annotations

import logging

from celery import current_app as app
from django.conf import settings
from kombu.exceptions import OperationalError

log = logging.getLogger(__name__)
KINDS = ("cpu", "gpu", "api")
# Publishing gives up quickly: a web request must not hang on a dead broker; the reaper re-sends.
PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}


def queue_name(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown queue kind {kind!r}")
    return f"{settings.CAPBENCH_QUEUE_PREFIX}{kind}"


def all_queue_names() -> list[str]:
    return [queue_name(kind) for kind in KINDS]


def enqueue(task: str, args: list, *, kind: str = "cpu", countdown: float | None = None) -> bool:
    """Send a task; False (logged) when the broker cannot be reached. Callers keep their state in
    the database first, so nothing is lost: the periodic reaper sends again."""
    try:
        app.send_task(
            task, args=args, queue=queue_name(kind), countdown=countdown, retry=True, retry_policy=PUBLISH_RETRY
        )
    except (OperationalError, ConnectionError, OSError) as error:
        log.warning("broker unreachable, %s%s stays queued in the database: %s", task, args, error)
        return False
    return True


def enqueue_many(task: str, each_args: list[list], *, kind: str = "cpu") -> int:
    """Send one task per argument list over one broker connection, in order; returns how many the
    broker took before it could not be reached (the rest stay queued in the database: the reaper
    re-sends them)."""
    sent = 0
    try:
        with app.producer_or_acquire() as producer:
            for args in each_args:
                app.send_task(
                    task, args=args, queue=queue_name(kind), retry=True, retry_policy=PUBLISH_RETRY, producer=producer
                )
                sent += 1
    except (OperationalError, ConnectionError, OSError) as error:
        log.warning("broker unreachable, %d of %d %s task(s) stay queued in the database: %s",
                    len(each_args) - sent, len(each_args), task, error)  # fmt: skip
    return sent
