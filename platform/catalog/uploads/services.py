"""Publishing, hiding and withdrawing an owned upload (catalog.uploads.models), whatever its kind.
What a kind adds comes with its `UploadKind`: `submissions.services.SUBMISSIONS` stops the scoring
of a withdrawn submission and rebuilds its board; `workbench.services.METRICS` computes the public
significance clusters again."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from django.db import transaction

from catalog.uploads.models import U
from plumbing.errors import ApplicationError


class UploadRefused(ApplicationError, ValueError):
    """A change the upload cannot take in its state: a withdrawn one made public."""


def _nothing(upload) -> None:
    return None


@dataclass(frozen=True)
class UploadKind(Generic[U]):
    model: type[U]
    noun: str  # "submission": in refusals and the pages' words ("changes to your submissions")
    kept: str  # what a withdrawal keeps, as its owner is told: "its file and scores"
    # Inside the withdrawal's transaction, once saved: what else stops.
    withdrawn: Callable[[U], None] = _nothing
    # After a change of visibility (at once) and a withdrawal (once committed): what reads it again.
    changed: Callable[[U], None] = _nothing


def upload_visibility_set(*, upload: U, is_public: bool, kind: UploadKind[U]) -> U:
    """Publish or hide it; a withdrawn one stays hidden."""
    if upload.is_withdrawn and is_public:
        raise UploadRefused(f"a withdrawn {kind.noun} cannot be made public")
    if upload.is_public != is_public:
        upload.is_public = is_public
        _save(upload, "is_public")
        kind.changed(upload)
    return upload


def upload_withdraw(*, upload: U, kind: UploadKind[U]) -> U:
    """Off every page but its owner's and staff's, for good; its files and scores are kept."""
    if upload.is_withdrawn:
        return upload
    with transaction.atomic():
        upload.status, upload.is_public = upload.WITHDRAWN, False
        _save(upload, "status", "is_public")
        kind.withdrawn(upload)
        transaction.on_commit(lambda: kind.changed(upload))
    return upload


def _save(upload: U, *fields: str) -> None:
    """`fields`, and the kind's `auto_now` ones (an `updated_at`), which `update_fields` would skip."""
    stamped = [field.name for field in upload._meta.concrete_fields if getattr(field, "auto_now", False)]
    upload.save(update_fields=[*fields, *stamped])
