"""A campaign's answers in the canonical dataset format (docs/canonical-format.md), annotators
pseudonymised: a rating campaign's as `judgment` lines, an arena's as `pair` lines, with the
captions answered (and their items, media and systems) only. Only captions everyone may read one by
one (a system that another, open campaign rates is left out until that one closes: blind annotation,
catalog.visibility.caption_q); gold checks and flagged annotators' answers (when the campaign
leaves them out) are not exported."""

from __future__ import annotations

import json
from collections.abc import Iterator

from campaigns.models import Annotation, Campaign
from campaigns.rubrics import dimension_of
from campaigns.services.identity import pseudonym
from campaigns.services.quality import annotator_quality
from catalog.models import Caption, Judgment, System


def _line(row_type: str, /, **fields) -> str:
    return json.dumps({"type": row_type, **fields}, ensure_ascii=False) + "\n"


def campaign_export_lines(campaign: Campaign) -> Iterator[str]:
    dataset = campaign.dataset
    rubric = [dimension_of(data) for data in campaign.rubric]
    quality = annotator_quality(campaign)
    left_out = {user for user, entry in quality.items() if entry["flagged"]} if campaign.exclude_flagged else set()
    tasks = (
        Annotation.objects.filter(campaign=campaign, status=Annotation.Status.ANSWERED, decoy__isnull=True)
        .exclude(annotator_id__in=left_out)
        .order_by("id")
    )
    excluded = {pseudonym(campaign, user) for user in left_out}
    judgments = Judgment.collected.collected_in(campaign.source).exclude(annotator__in=excluded)
    if campaign.is_arena:
        answered = {pk for pair in tasks.values_list("caption_id", "other_id") for pk in pair}
    else:
        answered = set(judgments.values_list("caption_id", flat=True))
    # The captions answered (their items, media and systems), of those everyone may see, less those of
    # a system another campaign still rates: blind until that one closes (catalog.visibility.caption_q).
    # This campaign's own are in: its export is its organisers' alone while it is open.
    elsewhere = Campaign.objects.filter(status=Campaign.Status.OPEN).exclude(pk=campaign.pk)
    blind = set(System.objects.filter(campaigns__in=elsewhere).values_list("pk", flat=True))
    captions = list(
        Caption.objects.visible_to(None)
        .filter(pk__in=answered, item__dataset=dataset, system__in=campaign.systems.all())
        .exclude(system_id__in=blind)
        .select_related("item__media", "system")
        .order_by("item__external_id", "system__slug", "external_id")
    )
    by_id = {caption.pk: caption for caption in captions}
    yield _line(
        "dataset",
        format="capbench-canonical",
        format_version=1,
        slug=f"{dataset.slug}-{campaign.slug}"[:100],
        title=f"{dataset.title}: {campaign.title}",
        source_format="canonical",
        modality=dataset.modality,
        kind="pairwise" if campaign.is_arena else "rating",
        dimensions=[] if campaign.is_arena else [d.key for d in rubric],
        rating_scale={} if campaign.is_arena or not rubric else {"min": rubric[0].low, "max": rubric[0].high},
        description=f"Collected live on CapBench by the campaign {campaign.slug}. {campaign.description}".strip(),
        citation=dataset.citation,
        licence=dataset.licence,
        url=dataset.url,
        protocol_version="1",
        protocol_notes="annotators pseudonymised per campaign; gold checks left out",
    )
    systems = System.objects.filter(pk__in={caption.system_id for caption in captions}).order_by("slug")
    for system in systems:
        yield _line(
            "system",
            slug=system.slug,
            name=system.name,
            kind=system.kind,
            description=system.description,
            is_baseline=system.is_baseline,
        )
    items = {caption.item_id: caption.item for caption in captions}
    media = sorted({item.media for item in items.values() if item.media}, key=lambda m: m.name)
    for found in media:
        yield _line(
            "media",
            name=found.name,
            kind=found.kind,
            expected_md5=found.expected_md5,
            manifest_path=found.manifest_path,
        )
    for item in sorted(items.values(), key=lambda i: i.external_id):
        yield _line(
            "item",
            external_id=item.external_id,
            media=item.media.name if item.media else None,
            references=item.references,
            metadata=item.metadata,
        )
    for caption in captions:
        yield _line(
            "caption",
            item=caption.item.external_id,
            system=caption.system.slug,
            id=caption.external_id,
            text=caption.text,
        )
    if campaign.is_arena:
        shown = [
            (task, by_id[task.caption_id], by_id[task.other_id])
            for task in tasks
            if task.caption_id in by_id and task.other_id in by_id
        ]
        # Numbered after the filter: a gap would tell how many comparisons showed hidden captions.
        for number, (task, left, right) in enumerate(shown, start=1):
            yield _line(
                "pair",
                id=f"{number}",
                item=left.item.external_id,
                a={"system": left.system.slug, "caption": left.external_id},
                b={"system": right.system.slug, "caption": right.external_id},
                category=pseudonym(campaign, task.annotator_id),
                winner={"left": "a", "right": "b"}.get(task.winner, "tie"),
                votes_a=None,
                votes_b=None,
                references=None,
            )
        return
    for judgment in judgments.filter(caption_id__in=list(by_id)).order_by("caption_id", "annotator", "dimension"):
        caption = by_id[judgment.caption_id]
        yield _line(
            "judgment",
            item=caption.item.external_id,
            system=caption.system.slug,
            caption=caption.external_id,
            dimension=judgment.dimension,
            annotator=judgment.annotator,
            value=judgment.value,
            detail=judgment.detail,
        )
