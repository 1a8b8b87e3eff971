"""Which Celery workers are alive, wherever they run: each worker's main process keeps a key in
Redis (`<prefix>worker-alive:<hostname>`) that expires CAPBENCH_WORKER_HEARTBEAT seconds after its
last beat, renewed three times in that span, deleted at a clean stop.

A batch held by a worker whose key has expired is free to take: a worker killed on another machine
(power, out of memory, SIGKILL) never says so, and its batches must not wait for the task time
limit. The claim in scoring.services.batches and the reaper read `alive`.

Beside it, `<prefix>worker-warm:<hostname>` records each of the worker's processes that has warmed
up (scoring.warmup: the JVMs its queues' metrics need started), with the seconds it took; it lives
as long as the worker beats. A benchmark waits on it before it starts the clock."""

from __future__ import annotations

import contextlib
import logging
import threading

import redis
from django.conf import settings

from plumbing import valkey

log = logging.getLogger(__name__)


def _key(hostname: str) -> str:
    return f"{settings.CAPBENCH_QUEUE_PREFIX}worker-alive:{hostname}"


def _warm_key(hostname: str) -> str:
    return f"{settings.CAPBENCH_QUEUE_PREFIX}worker-warm:{hostname}"


def beat(hostname: str) -> None:
    with valkey.client().pipeline(transaction=False) as pipe:
        pipe.set(_key(hostname), "1", ex=settings.CAPBENCH_WORKER_HEARTBEAT)
        pipe.expire(_warm_key(hostname), settings.CAPBENCH_WORKER_HEARTBEAT)
        pipe.execute()


def stopped(hostname: str) -> None:
    valkey.client().delete(_key(hostname), _warm_key(hostname))


def warmed(hostname: str, pid: int, seconds: float) -> None:
    """Process `pid` of the worker `hostname` has warmed up, in `seconds`."""
    with valkey.client().pipeline(transaction=False) as pipe:
        pipe.hset(_warm_key(hostname), str(pid), f"{seconds:.3f}")
        pipe.expire(_warm_key(hostname), settings.CAPBENCH_WORKER_HEARTBEAT)
        pipe.execute()


def warm_processes(hostname: str) -> dict[int, float]:
    """The worker's processes that have warmed up, and the seconds each took."""
    return {int(pid): float(seconds) for pid, seconds in valkey.client().hgetall(_warm_key(hostname)).items()}


def alive(hostname: str) -> bool:
    """Whether the worker named `hostname` (a Celery hostname, "name@host") beat recently. When
    Redis cannot say, it is taken as alive: nothing is taken from a worker on a guess."""
    try:
        return bool(valkey.client().exists(_key(hostname)))
    except redis.RedisError:
        log.warning("cannot read the heartbeat of %s: taken as alive", hostname)
        return True


def alive_workers() -> list[str] | None:
    """The hostnames of the workers beating now (None: Redis did not answer)."""
    prefix = _key("")
    try:
        keys = valkey.client().scan_iter(match=f"{prefix}*", count=1000)
        return sorted(key.decode()[len(prefix) :] for key in keys)
    except redis.RedisError:
        return None


class Heartbeat:
    """The thread of a worker's main process that keeps its key (started at worker_ready)."""

    def __init__(self, hostname: str) -> None:
        self.hostname = hostname
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="capbench-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._beat()  # alive from the first moment it can take a task (or as soon as Redis answers)
        self._thread.start()
        return self

    def _beat(self) -> None:
        try:
            beat(self.hostname)
        except Exception:  # the thread must outlive any failure: a silent worker loses its batches
            log.warning("heartbeat of %s not sent", self.hostname, exc_info=True)

    def _run(self) -> None:
        while not self._stop.wait(settings.CAPBENCH_WORKER_HEARTBEAT / 3):
            self._beat()

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(redis.RedisError):  # else it expires on its own
            stopped(self.hostname)
