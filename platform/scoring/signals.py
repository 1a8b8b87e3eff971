"""A worker that starts takes back the batches a dead worker of the same name held."""

from __future__ import annotations

import logging

from celery.signals import worker_ready

from scoring.services.reaper import batches_recover_worker

log = logging.getLogger(__name__)


@worker_ready.connect
def recover_batches(sender=None, **_) -> None:
    try:
        batches_recover_worker(worker=sender.hostname)
    except Exception:  # the database may be down at start; the reaper catches up later
        log.exception("could not recover the batches of %s", getattr(sender, "hostname", "?"))
