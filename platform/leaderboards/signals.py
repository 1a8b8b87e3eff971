"""Boards follow the work: a job that ends, a submission whose visibility changes, a live
campaign's new results (its people column), or an edited system or dataset rebuilds the dataset's
snapshot."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from campaigns.events import results_changed
from campaigns.models import Campaign
from catalog.models import Dataset, System
from leaderboards.models import BoardSnapshot
from leaderboards.snapshots import board_refresh
from scoring.events import job_ended, numbers_changed
from submissions.events import submission_changed

log = logging.getLogger(__name__)


@receiver(job_ended)
@receiver(numbers_changed)
@receiver(submission_changed)
@receiver(results_changed)
def rebuild_board(sender, dataset_id: int, **_) -> None:
    try:
        board_refresh(dataset_id=dataset_id)
    except Exception:  # a stale board must never undo the work that triggered it
        log.exception("could not rebuild the board of dataset %s", dataset_id)


@receiver(post_save, sender=System)
def system_saved(sender, instance: System, created: bool, **_) -> None:
    """A system's name, kind or baseline flag changed (the admin, an import): its board shows them."""
    if not created:
        transaction.on_commit(lambda: rebuild_board(sender, dataset_id=instance.dataset_id))


@receiver(post_save, sender=Dataset)
def dataset_saved(sender, instance: Dataset, created: bool, **_) -> None:
    """The dataset's headline metric or dimensions changed: the board's people column follows them."""
    if not created and BoardSnapshot.objects.filter(dataset=instance).exists():
        transaction.on_commit(lambda: rebuild_board(sender, dataset_id=instance.pk))


@receiver(post_save, sender=Campaign)
@receiver(post_delete, sender=Campaign)
def campaign_changed(sender, instance: Campaign, created: bool = False, **_) -> None:
    """A campaign renamed or deleted: a board whose people column is a campaign's shows the change."""
    if created:
        return

    def rebuild() -> None:
        shown = BoardSnapshot.objects.filter(
            dataset_id=instance.dataset_id, payload__people_campaign__slug__isnull=False
        )
        if shown.exists():  # (none once the dataset itself is deleted)
            rebuild_board(sender, dataset_id=instance.dataset_id)

    transaction.on_commit(rebuild)
