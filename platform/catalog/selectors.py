"""Reads of catalog content for pages and commands."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import Count, Prefetch, Q, QuerySet

from capbench_eval.metaeval.protocols import CORPUS_WORDS, dataset_protocols_of
from catalog.models import Caption, Dataset, Item, Judgment, Media, PairJudgment, System, blinded_system_ids, ranked_q
from catalog.pictures import showable_q
from catalog.visibility import caption_q, is_staff, references_visible, visible_q


def dataset_list_public(*, viewer=None) -> QuerySet[Dataset]:
    """Public datasets with their item count and the number of systems `viewer` may see on their
    boards."""
    return (
        Dataset.objects.visible_to(viewer)
        .annotate(
            item_count=Count("items", distinct=True),
            system_count=Count(
                "systems",
                distinct=True,
                filter=visible_q(viewer, to_system="systems__") & ranked_q(to_system="systems__"),
            ),
        )
        .order_by("title")
    )


def datasets_by_purpose(*, viewer=None) -> dict[str, list[Dataset]]:
    """The public datasets in two lists: `benchmarks` (captioner benchmarks: references, no
    judgments) and `meta_sets` (meta-evaluation sets: human judgments of captions)."""
    datasets = list(dataset_list_public(viewer=viewer))
    return {
        "benchmarks": [d for d in datasets if d.is_benchmark],
        "meta_sets": [d for d in datasets if not d.is_benchmark],
    }


SUBSET_FIELD = "domain"  # the item metadata key a board subset is read from (nocaps' domains)
HIDDEN_SUBSET_MIN_ITEMS = 30
SUBSET_NAME = re.compile(r"[\w.-]{1,40}")  # what a subset may be called (it goes into URLs and file names)
_subsets_known: dict[tuple[int, str, bool], list[str]] = {}  # per dataset, content and hiding


def item_subsets(dataset: Dataset) -> list[str]:
    """The subsets of the dataset's items a board can be limited to (their `metadata["domain"]`
    values, sorted), none when no item has one. On a hidden test set only the subsets of at least
    HIDDEN_SUBSET_MIN_ITEMS items: a number over a few images would tell about their references.
    Kept per process for each imported content (a re-import changes its fingerprint)."""
    key = (dataset.pk, dataset.content_sha256, dataset.references_hidden)
    if key not in _subsets_known:
        counts: dict[str, int] = {}
        found = Item.objects.filter(dataset=dataset, metadata__has_key=SUBSET_FIELD).values_list(
            f"metadata__{SUBSET_FIELD}", flat=True
        )
        for value in found:
            if isinstance(value, str) and SUBSET_NAME.fullmatch(value):
                counts[value] = counts.get(value, 0) + 1
        least = HIDDEN_SUBSET_MIN_ITEMS if dataset.references_hidden else 1
        _subsets_known[key] = sorted(name for name, count in counts.items() if count >= least)
    return _subsets_known[key]


def chosen_subset(params, dataset: Dataset) -> str | None:
    """The subset `?domain=` names when it is one of the dataset's (item_subsets), else None."""
    asked = params.get(SUBSET_FIELD)
    return asked if asked and asked in item_subsets(dataset) else None


def dataset_counts(*, dataset: Dataset, viewer=None) -> dict[str, int]:
    """What the dataset page counts; captions as far as `viewer` may see them, systems as far as
    `viewer` sees them on the board."""
    media = Media.objects.filter(dataset=dataset).aggregate(
        declared=Count("id"),
        available=Count("id", filter=~Q(stored_path="")),
        by_url=Count("id", filter=Q(stored_path="") & showable_q()),
        with_checksum=Count("id", filter=~Q(expected_md5="")),
    )
    return {
        "items": Item.objects.filter(dataset=dataset).count(),
        "captions": Caption.objects.visible_to(viewer).filter(item__dataset=dataset).count(),
        "judgments": Judgment.objects.filter(caption__item__dataset=dataset).count(),
        "pairs": PairJudgment.objects.filter(dataset=dataset).count(),
        "systems": System.objects.visible_to(viewer).ranked().filter(dataset=dataset).count(),
        "media_declared": media["declared"],
        "media_available": media["available"],
        "media_by_url": media["by_url"],
        "media_with_checksum": media["with_checksum"],
    }


def visible_captions(viewer) -> Prefetch:
    """An item's `captions`, as far as `viewer` may read them one by one (blind ones left out:
    catalog.visibility.caption_q)."""
    return Prefetch("captions", queryset=Caption.objects.listed_to(viewer).select_related("system").order_by("id"))


def visible_judgments(dataset: Dataset, viewer) -> Prefetch:
    """A caption's `judgments` as far as `viewer` may read them: none on a hidden test set."""
    shown = Judgment.objects.all() if references_visible(dataset, viewer) else Judgment.objects.none()
    return Prefetch("captions__judgments", queryset=shown.order_by("dimension", "id"))


def _items_shown(items: QuerySet[Item], dataset: Dataset, viewer) -> QuerySet[Item]:
    """`items` with their media, the captions `viewer` may see and the judgments they may read. On a
    hidden test set the references are not even loaded for a viewer who may not read them (the
    templates say they are hidden, `references_shown`)."""
    items = items.select_related("media").prefetch_related(visible_captions(viewer), visible_judgments(dataset, viewer))
    return items if references_visible(dataset, viewer) else items.defer("references")


def dataset_items_sample(*, dataset: Dataset, viewer=None, limit: int = 10) -> QuerySet[Item]:
    return _items_shown(Item.objects.filter(dataset=dataset), dataset, viewer).order_by("id")[:limit]


def dataset_items_page(*, dataset: Dataset, query: str = "", viewer=None) -> QuerySet[Item]:
    """Items in order, optionally those whose id or reference, or a caption `viewer` may read,
    contains `query`; each with the captions `viewer` may read. Hidden references are not searched
    (a search would answer, word by word, what they say), nor blind captions (an open campaign's:
    a search would tell an annotator which image a caption belongs to)."""
    items = Item.objects.filter(dataset=dataset)
    if query:
        matching = Caption.objects.listed_to(viewer).filter(item__dataset=dataset, text__icontains=query)
        found = Q(external_id__icontains=query) | Q(pk__in=matching.values("item_id"))
        if references_visible(dataset, viewer):
            found |= Q(references__icontains=query)
        items = items.filter(found)
    return _items_shown(items, dataset, viewer).order_by("id")


def blind_systems(*, dataset: Dataset, viewer=None) -> int:
    """How many of the dataset's systems `viewer` sees whose captions are blind to them now (an
    open campaign's: catalog.visibility.caption_q): what a page listing captions says it leaves out."""
    if is_staff(viewer):
        return 0
    blinded = blinded_system_ids(viewer)
    seen = System.objects.visible_to(viewer).filter(dataset=dataset, pk__in=blinded)
    return seen.exclude(caption_q(viewer, blinded=blinded)).count()


def any_blind(*, systems: list[System], viewer=None) -> bool:
    """Whether the captions of any of `systems` are blind to `viewer` now (catalog.visibility.caption_q)."""
    wanted = {system.pk for system in systems}
    listed = System.objects.filter(pk__in=wanted).filter(caption_q(viewer, blinded=blinded_system_ids(viewer)))
    return listed.count() < len(wanted)


@dataclass(frozen=True)
class ProtocolFacts:
    """What the dataset page says of one of its meta-evaluation protocols."""

    key: str
    name: str
    version: str
    statistics: tuple[str, ...]  # headline first; for pairs, the tie conventions
    rows: str
    references: str
    corpus: str  # the corpus rule in words
    corpus_source: str
    notes: str


def dataset_protocol_facts(*, dataset: Dataset) -> list[ProtocolFacts]:
    """The dataset's meta-evaluation protocols (paper first), each with its rows, references,
    statistics and the corpus a corpus-dependent metric scores its candidates in."""
    return [
        ProtocolFacts(
            key=chosen.key,
            name=chosen.name,
            version=chosen.version,
            statistics=chosen.statistics,
            rows=chosen.rows,
            references=chosen.references,
            corpus=CORPUS_WORDS[chosen.corpus.rule],
            corpus_source=chosen.corpus.source,
            notes=chosen.notes,
        )
        for chosen in dataset_protocols_of(dataset.source_format, dataset.slug, dataset.kind)
    ]
