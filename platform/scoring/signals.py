"""A worker that starts takes back the batches a dead worker of the same name held, and beats
while it runs (plumbing/heartbeat.py): other workers and the reaper take what a silent one held.
Each process that runs tasks warms up as it starts (scoring/warmup.py)."""

from __future__ import annotations

import logging

from celery import current_app as app
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import worker_process_init, worker_ready, worker_shutdown
from django.conf import settings

from plumbing.heartbeat import Heartbeat
from scoring.services.reaper import batches_recover_worker
from scoring.warmup import served_kinds, warm_in_background

log = logging.getLogger(__name__)


@worker_ready.connect
def recover_batches(sender=None, **_) -> None:
    try:
        batches_recover_worker(worker=sender.hostname)
    except Exception:  # the database may be down at start; the reaper catches up later
        log.exception("could not recover the batches of %s", getattr(sender, "hostname", "?"))


_beating: list[Heartbeat] = []


@worker_ready.connect
def start_beating(sender=None, **_) -> None:
    try:
        _beating.append(Heartbeat(sender.hostname).start())
    except Exception:  # Redis down at start: the worker still works; others may take its batches
        log.exception("no heartbeat for %s", getattr(sender, "hostname", "?"))


@worker_shutdown.connect
def stop_beating(**_) -> None:
    while _beating:
        _beating.pop().stop()


@worker_process_init.connect
def warm_pool_process(sender=None, **_) -> None:
    """A prefork pool child, just forked (`sender`: the worker's hostname): its own JVMs, never the parent's."""
    _warm(str(sender))


@worker_ready.connect
def warm_single_process(sender=None, **_) -> None:
    """Pools without child processes (solo, threads) run the tasks in this process: it warms itself."""
    if not isinstance(getattr(sender, "pool", None), PreforkPool):
        _warm(getattr(sender, "hostname", "?"))


def _warm(hostname: str) -> None:
    try:
        kinds = served_kinds(app.amqp.queues.consume_from) if settings.CAPBENCH_WORKER_WARMUP else []
        warm_in_background(hostname=hostname, kinds=kinds)  # off or no metric: recorded warm at once
    except Exception:  # never stops a worker: its first batch starts what it needs
        log.exception("no warm-up for a process of %s", hostname)
