"""Boards follow the work: a job that ends or a submission whose visibility changes rebuilds the
dataset's snapshot."""

from __future__ import annotations

import logging

from django.dispatch import receiver

from leaderboards.snapshots import board_refresh
from scoring.events import job_ended
from submissions.events import submission_changed

log = logging.getLogger(__name__)


@receiver(job_ended)
@receiver(submission_changed)
def rebuild_board(sender, dataset_id: int, **_) -> None:
    try:
        board_refresh(dataset_id=dataset_id)
    except Exception:  # a stale board must never undo the work that triggered it
        log.exception("could not rebuild the board of dataset %s", dataset_id)
