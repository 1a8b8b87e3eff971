"""Hiding a dataset's references (a hidden test set) and showing them again.

What "hidden" withholds, and from whom, is decided by `catalog.visibility.references_visible`; this
module only changes the flag, the one way besides `datasets import --references-hidden`.
"""

from __future__ import annotations

from django.db import transaction

from catalog.models import Dataset
from plumbing.errors import ApplicationError


class HidingRefused(ApplicationError, ValueError):
    """This dataset's references cannot be hidden (said in plain words)."""


def hiding_problem(kind: str) -> str | None:
    """Why a dataset of `kind` cannot be a hidden test set, or None. A FOIL set's pairs tell their
    own outcome (the original caption always wins, and its captions are shown), so hiding them
    would promise what it cannot keep."""
    if kind == Dataset.Kind.FOIL:
        return "a FOIL set cannot be a hidden test set: its pairs tell their outcome (the original caption always wins)"
    return None


@transaction.atomic
def dataset_references_set(*, dataset: Dataset, hidden: bool) -> bool:
    """Mark `dataset`'s references hidden or public; whether that changed anything."""
    problem = hiding_problem(dataset.kind) if hidden else None
    if problem:
        raise HidingRefused(f"{dataset.slug}: {problem}")
    locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
    if locked.references_hidden == hidden:
        dataset.references_hidden = hidden
        return False
    Dataset.objects.filter(pk=dataset.pk).update(references_hidden=hidden)
    dataset.references_hidden = hidden
    return True
