"""Which items have a picture an annotator can be shown: the one rule of catalog/pictures.py (a
stored file, else an image URL on a host the site allows). An item without one is never given to an
annotator (campaigns/services/assignment.py): a caption is judged against its picture, never alone.

A task's picture is served under an opaque name of its own (`task_picture_token`), never the
media's id or stored name: the annotation page names nothing an annotator could look up
(docs/human-evaluation.md, "Blind annotation")."""

from __future__ import annotations

import hashlib
import hmac
import mimetypes
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Q
from django.urls import reverse

from campaigns.models import Annotation, Campaign
from catalog.models import Dataset, Item, Media
from catalog.pictures import picture_of, showable_q


def pictured_q(*, to_item: str = "") -> Q:
    """Items (over the path `to_item`, "" on Item itself) whose media a page shows (catalog.pictures);
    an item without media has none (a negated filter across the nullable link would keep it)."""
    return Q(**{f"{to_item}media__isnull": False}) & showable_q(f"{to_item}media__")


@dataclass(frozen=True)
class PictureCount:
    """A dataset's items and how many of them have no picture to show."""

    items: int
    without: int

    @property
    def none_shown(self) -> bool:
        return self.items > 0 and self.without == self.items

    def words(self) -> str:
        """The problem in words ("" when every item has its picture)."""
        if not self.without:
            return ""
        if self.none_shown:
            return (
                f"None of the {self.items:,} items has a picture (no stored file, and no image URL the site may "
                "show), and a caption is never shown to annotators without its picture: there is nothing to "
                "annotate until its media are attached."
            )
        return (
            f"{self.without:,} of {self.items:,} items have no picture (no stored file, and no image URL the site "
            f"may show): their captions are never shown to annotators, who are given the other "
            f"{self.items - self.without:,}."
        )


def dataset_pictures(dataset: Dataset) -> PictureCount:
    items = Item.objects.filter(dataset=dataset)
    total = items.count()
    return PictureCount(items=total, without=total - items.filter(pictured_q()).count())


def task_picture_token(task: Annotation) -> str:
    """The opaque name a task's picture is served under: keyed by the task and its annotator with
    the server's secret, so it names neither the item, nor the file, nor the caption, and no two
    tasks share it (a gold check's picture looks like any other's)."""
    message = f"task-picture\x1f{task.pk}\x1f{task.annotator_id}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class TaskPicture:
    """What the annotation page shows: the task's own URL for its picture, and whether a video."""

    src: str
    kind: str


def task_picture_shown(task: Annotation) -> TaskPicture | None:
    """The task's picture under its opaque URL (None when its medium has none to show)."""
    media = task.item.media
    if picture_of(media) is None:
        return None
    src = reverse("campaigns:task-picture", args=[task.campaign.slug, task_picture_token(task)])
    return TaskPicture(src, media.kind if media is not None else Media.Kind.IMAGE)


@dataclass(frozen=True)
class PictureServed:
    """A task's picture as its URL answers: a stored file (`stored_path`, `content_type`), or a
    redirect to its publisher's URL (`remote`)."""

    stored_path: str = ""
    content_type: str = ""
    remote: str = ""


def picture_served(*, campaign: Campaign, user, token: str) -> PictureServed | None:
    """The picture of `user`'s open task in `campaign` when `token` names it (None otherwise: another
    task's, an answered task's, anyone else's). Read through the visibility rule: the campaign's
    dataset is one the user may see, and only their own open task's picture is served."""
    if user is None or not user.is_authenticated or len(token) != 32:
        return None
    task = (
        Annotation.objects.filter(
            campaign=campaign,
            campaign__dataset__in=Dataset.objects.visible_to(user),
            annotator=user,
            status=Annotation.Status.SHOWN,
        )
        .select_related("item__media")
        .first()
    )
    if task is None or not hmac.compare_digest(task_picture_token(task), token):
        return None
    media = task.item.media
    picture = picture_of(media)
    if picture is None or media is None:
        return None
    if picture.remote:
        return PictureServed(remote=picture.src)
    kind = "video/mp4" if media.kind == Media.Kind.VIDEO else "image/jpeg"
    guessed = mimetypes.guess_type(media.stored_path)[0] or mimetypes.guess_type(media.name)[0]
    return PictureServed(stored_path=media.stored_path, content_type=guessed or kind)
