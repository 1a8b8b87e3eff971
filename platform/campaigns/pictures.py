"""Which items have a picture an annotator can be shown: the one rule of catalog/pictures.py (a
stored file, else an image URL on a host the site allows). An item without one is never given to an
annotator (campaigns/services/assignment.py): a caption is judged against its picture, never alone."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from catalog.models import Dataset, Item
from catalog.pictures import showable_q


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
