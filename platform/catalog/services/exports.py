"""Reading a stored dataset back into a bundle (for `datasets export` and fingerprints)."""

from __future__ import annotations

from collections.abc import Collection

from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    JudgmentRow,
    MediaRow,
    PairRow,
    SystemRow,
)
from catalog.models import Caption, Dataset, Item, Judgment, Media, PairJudgment, System
from catalog.visibility import own_q

WITHHELD_NOTE = (
    "References withheld: this is a hidden test set, so this copy carries no references, human "
    "judgments or pair outcomes."
)
INFO_FIELDS = [
    "slug",
    "title",
    "source_format",
    "modality",
    "kind",
    "dimensions",
    "rating_scale",
    "description",
    "citation",
    "licence",
    "url",
    "protocol_version",
    "protocol_notes",
]


def dataset_bundle(
    *, dataset: Dataset, withhold_references: bool = False, blind: Collection[int] = ()
) -> DatasetBundle:
    """The dataset's own content, in storage order, as plain rows: its systems and captions, never
    a submission's (those belong to their owners; catalog.visibility).

    `withhold_references`: what a hidden test set offers a viewer who may not read its references
    (catalog.visibility.references_visible): the items with empty references, no judgments, pairs
    without their winner, votes or reference draw, and a protocol note saying so.

    `blind`: systems whose captions are left out, with the judgments and pairs of those captions (an
    open campaign's, for a viewer who may not read them: catalog.visibility.caption_q); the systems
    themselves stay listed."""
    bundle = DatasetBundle(info=DatasetInfo(**{name: getattr(dataset, name) for name in INFO_FIELDS}))
    if withhold_references:
        bundle.info.protocol_notes = f"{WITHHELD_NOTE} {bundle.info.protocol_notes}".strip()
    bundle.systems = [
        SystemRow(**row)
        for row in System.objects.own()
        .filter(dataset=dataset)
        .order_by("slug")
        .values("slug", "name", "kind", "description", "is_baseline")
    ]
    bundle.media = [
        MediaRow(**row)
        for row in Media.objects.filter(dataset=dataset)
        .order_by("name")
        .values("name", "kind", "expected_md5", "manifest_path", "url")
    ]
    references = "external_id" if withhold_references else "references"  # never read when withheld
    bundle.items = [
        ItemRow(
            external_id=row["external_id"],
            media=row["media__name"],
            references=[] if withhold_references else row["references"],
            metadata=row["metadata"],
        )
        for row in Item.objects.filter(dataset=dataset)
        .order_by("id")
        .values("external_id", "media__name", references, "metadata")
    ]
    keys: dict[int, CaptionKey] = {}
    for row in (
        Caption.objects.own()
        .filter(item__dataset=dataset)
        .exclude(system_id__in=list(blind))
        .order_by("id")
        .values("id", "item__external_id", "system__slug", "external_id", "text")
    ):
        keys[row["id"]] = CaptionKey(row["item__external_id"], row["system__slug"], row["external_id"])
        bundle.captions.append(CaptionRow(key=keys[row["id"]], text=row["text"]))
    if withhold_references:
        bundle.pairs = [
            PairRow(
                external_id=row["external_id"],
                item=row["item__external_id"],
                caption_a=keys[row["caption_a_id"]],
                caption_b=keys[row["caption_b_id"]],
                category=row["category"],
            )
            for row in PairJudgment.objects.filter(dataset=dataset)
            .order_by("id")
            .values("external_id", "item__external_id", "caption_a_id", "caption_b_id", "category")
            if row["caption_a_id"] in keys and row["caption_b_id"] in keys
        ]
        return bundle
    bundle.judgments = [
        JudgmentRow(
            caption=keys[row["caption_id"]],
            dimension=row["dimension"],
            value=row["value"],
            annotator=row["annotator"],
            detail=row["detail"],
        )
        # Joined, not `caption__in=<own captions>`: on tables a fresh import has just filled (no
        # statistics yet) PostgreSQL may plan that subquery per row, minutes instead of seconds.
        for row in Judgment.objects.filter(own_q(to_system="caption__system__"), caption__item__dataset=dataset)
        .order_by("id")
        .values("caption_id", "dimension", "value", "annotator", "detail")
        if row["caption_id"] in keys
    ]
    bundle.pairs = [
        PairRow(
            external_id=row["external_id"],
            item=row["item__external_id"],
            caption_a=keys[row["caption_a_id"]],
            caption_b=keys[row["caption_b_id"]],
            category=row["category"],
            winner=row["winner"],
            votes_a=row["votes_a"],
            votes_b=row["votes_b"],
            references=row["references"],
        )
        for row in PairJudgment.objects.filter(dataset=dataset)
        .order_by("id")
        .values(
            "external_id",
            "item__external_id",
            "caption_a_id",
            "caption_b_id",
            "category",
            "winner",
            "votes_a",
            "votes_b",
            "references",
        )
        if row["caption_a_id"] in keys and row["caption_b_id"] in keys
    ]
    return bundle
