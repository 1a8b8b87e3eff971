"""Hiding a dataset's references (a hidden test set) and showing them again.

What "hidden" withholds, and from whom, is decided by `catalog.visibility.references_visible`; this
module only changes the flag, the one way besides `datasets import --references-hidden`.
"""

from __future__ import annotations

from django.db import transaction

from catalog.models import Dataset


@transaction.atomic
def dataset_references_set(*, dataset: Dataset, hidden: bool) -> bool:
    """Mark `dataset`'s references hidden or public; whether that changed anything."""
    locked = Dataset.objects.select_for_update().get(pk=dataset.pk)
    if locked.references_hidden == hidden:
        dataset.references_hidden = hidden
        return False
    Dataset.objects.filter(pk=dataset.pk).update(references_hidden=hidden)
    dataset.references_hidden = hidden
    return True
