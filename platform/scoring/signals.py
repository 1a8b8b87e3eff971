"""A worker that starts takes back the batches a dead worker of the same name held, and beats
while it runs (capbench/heartbeat.py): other workers and the reaper take what a silent one held."""

from __future__ import annotations

import logging

from celery.signals import worker_ready, worker_shutdown

from capbench.heartbeat import Heartbeat
from scoring.services.reaper import batches_recover_worker

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
