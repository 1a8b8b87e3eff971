"""A worker that starts takes back the batches a dead worker of the same name held, and beats
while it runs (capbench/heartbeat.py): other workers and the reaper take what a silent one held.
A deleted correlation or significance result moves the results revision (the metric board's)."""

from __future__ import annotations

import logging

from celery.signals import worker_ready, worker_shutdown
from django.db.models.signals import post_delete
from django.dispatch import receiver

from capbench.heartbeat import Heartbeat
from scoring.models import CorrelationResult, SignificanceResult
from scoring.services.correlations import results_revision_bump
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


@receiver([post_delete], sender=CorrelationResult)
@receiver([post_delete], sender=SignificanceResult)
def results_deleted(sender=None, **_) -> None:
    """A result deleted (a dataset or metric version removed, the admin): the metric board's table
    is rebuilt (ResultsRevision)."""
    results_revision_bump()
