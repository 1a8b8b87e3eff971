"""Reads of catalog content for pages and commands."""
from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet

from catalog.models import Caption, Dataset, Item, Judgment, Media, PairJudgment


def dataset_list_public() -> QuerySet[Dataset]:
    return Dataset.objects.filter(is_public=True).annotate(
        item_count=Count("items", distinct=True),
        system_count=Count("systems", distinct=True),
    ).order_by("title")


def dataset_counts(*, dataset: Dataset) -> dict[str, int]:
    media = Media.objects.filter(dataset=dataset).aggregate(
        declared=Count("id"), available=Count("id", filter=~Q(stored_path="")),
        with_checksum=Count("id", filter=~Q(expected_md5="")))
    return {
        "items": Item.objects.filter(dataset=dataset).count(),
        "captions": Caption.objects.filter(item__dataset=dataset).count(),
        "judgments": Judgment.objects.filter(caption__item__dataset=dataset).count(),
        "pairs": PairJudgment.objects.filter(dataset=dataset).count(),
        "systems": dataset.systems.count(),
        "media_declared": media["declared"],
        "media_available": media["available"],
        "media_with_checksum": media["with_checksum"],
    }


def dataset_items_sample(*, dataset: Dataset, limit: int = 10) -> QuerySet[Item]:
    return (Item.objects.filter(dataset=dataset).select_related("media")
            .prefetch_related("captions__judgments").order_by("id")[:limit])


def captions_visible(viewer=None) -> Q:
    """The dataset's own captions, public submissions' and the viewer's own submissions'."""
    visible = Q(system__submission__isnull=True) | Q(system__submission__is_public=True)
    if viewer is not None and viewer.is_authenticated:
        visible |= Q(system__submission__owner=viewer)
    return visible


def dataset_items_page(*, dataset: Dataset, query: str = "", viewer=None) -> QuerySet[Item]:
    """Items in order, optionally those whose id or a caption or reference contains `query`; each
    with the captions `viewer` may see (a private submission's are its owner's)."""
    items = Item.objects.filter(dataset=dataset)
    if query:
        items = items.filter(Q(external_id__icontains=query) | Q(captions__text__icontains=query)
                             | Q(references__icontains=query)).distinct()
    captions = Caption.objects.filter(captions_visible(viewer)).select_related("system").order_by("id")
    return (items.select_related("media")
            .prefetch_related(Prefetch("captions", queryset=captions), "captions__judgments").order_by("id"))
