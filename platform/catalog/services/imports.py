"""Storing a parsed dataset: one transaction, bulk upserts, idempotent re-imports."""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from django.db import connection, models, transaction

from catalog.importers.bundle import DatasetBundle
from catalog.models import Caption, Dataset, ImportRecord, Item, Judgment, Media, PairJudgment, System
from catalog.services.references import HidingRefused, hiding_problem

BATCH = 5000


@dataclass
class ImportOutcome:
    dataset: Dataset
    changed: bool
    counts: dict[str, int]
    report: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    removed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


@transaction.atomic
def dataset_import(
    *,
    bundle: DatasetBundle,
    source_path: str,
    slug: str | None = None,
    title: str | None = None,
    references_hidden: bool = False,
) -> ImportOutcome:
    """Make dataset `slug` (default: the bundle's) hold exactly the bundle's content.

    `slug` and `title` override the bundle's without changing its content fingerprint.
    `references_hidden` hides the dataset's references (a hidden test set); it is not content, and a
    re-import without it never makes hidden references public (`dataset_references_set` does that).

    Re-importing identical content writes nothing but an ImportRecord. Changed content is upserted
    row by row (ids, and so scores, of unchanged captions survive); rows the new content no longer
    has are removed, except submitted systems' captions and attached media files.
    """
    started = time.perf_counter()
    problem = hiding_problem(bundle.info.kind) if references_hidden else None
    if problem:
        raise HidingRefused(problem)
    fingerprint = bundle.fingerprint()
    info = asdict(bundle.info)
    info["slug"] = slug or bundle.info.slug
    info["title"] = title or bundle.info.title
    dataset = Dataset.objects.select_for_update().filter(slug=info["slug"]).first()
    changed = dataset is None or dataset.content_sha256 != fingerprint
    removed: dict[str, int] = {}
    if dataset is None or changed:  # the same as `changed`; the first test narrows the type
        dataset = _dataset_upsert(dataset, info, fingerprint)
        removed = _content_store(dataset, bundle)
        if sum(bundle.counts().values()) >= ANALYZE_FROM_ROWS:
            _statistics_refresh()
    elif title and dataset.title != title:
        Dataset.objects.filter(pk=dataset.pk).update(title=title)
        dataset.title = title
    if references_hidden and not dataset.references_hidden:
        Dataset.objects.filter(pk=dataset.pk).update(references_hidden=True)
        dataset.references_hidden = True
    outcome = ImportOutcome(
        dataset=dataset,
        changed=changed,
        counts=bundle.counts(),
        report=dict(bundle.report),
        warnings=list(bundle.warnings),
        removed=removed,
    )
    outcome.seconds = time.perf_counter() - started
    ImportRecord.objects.create(
        dataset=dataset,
        source_format=bundle.info.source_format,
        source_path=source_path[-500:],
        content_sha256=fingerprint,
        changed=changed,
        counts=outcome.counts,
        seconds=outcome.seconds,
    )
    return outcome


ANALYZE_FROM_ROWS = 10_000  # a few thousand rows are planned well enough without it (the demo: 2,600)


def _statistics_refresh() -> None:
    """ANALYZE the tables an import filled (it counts this transaction's own rows): tens of thousands
    of new rows with no statistics made PostgreSQL plan the queries that follow (the export, the
    counts) as if the tables were empty, minutes instead of seconds, until autovacuum came by."""
    tables = [model._meta.db_table for model in (System, Media, Item, Caption, Judgment, PairJudgment)]
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {', '.join(tables)}")


def _dataset_upsert(dataset: Dataset | None, info: dict, fingerprint: str) -> Dataset:
    dataset = dataset or Dataset(slug=info["slug"])
    for name, value in info.items():
        setattr(dataset, name, value)
    dataset.content_sha256 = fingerprint
    dataset.save()
    return dataset


def _content_store(dataset: Dataset, bundle: DatasetBundle) -> dict[str, int]:
    systems = {
        row.slug: row
        for row in _upsert(
            System,
            [System(dataset=dataset, **asdict(row)) for row in bundle.systems],
            ["dataset", "slug"],
            ["name", "kind", "description", "is_baseline"],
        )
    }
    media = _media_store(dataset, bundle)
    items = {
        row.external_id: row
        for row in _upsert(
            Item,
            [
                Item(
                    dataset=dataset,
                    external_id=row.external_id,
                    media_id=media[row.media] if row.media else None,
                    references=row.references,
                    metadata=row.metadata,
                )
                for row in bundle.items
            ],
            ["dataset", "external_id"],
            ["media", "references", "metadata"],
        )
    }
    captions = _upsert(
        Caption,
        [
            Caption(
                item_id=items[row.key.item].id,
                system_id=systems[row.key.system].id,
                external_id=row.key.external_id,
                text=row.text,
            )
            for row in bundle.captions
        ],
        ["item", "system", "external_id"],
        ["text"],
    )
    caption_ids = {key.key: caption.id for key, caption in zip(bundle.captions, captions, strict=True)}
    judgments = _upsert(
        Judgment,
        [
            Judgment(
                caption_id=caption_ids[row.caption],
                dimension=row.dimension,
                annotator=row.annotator,
                value=row.value,
                detail=row.detail,
            )
            for row in bundle.judgments
        ],
        ["caption", "dimension", "annotator", "source"],
        ["value", "detail"],
    )
    pairs = _upsert(
        PairJudgment,
        [
            PairJudgment(
                dataset=dataset,
                item_id=items[row.item].id,
                external_id=row.external_id,
                caption_a_id=caption_ids[row.caption_a],
                caption_b_id=caption_ids[row.caption_b],
                category=row.category,
                winner=row.winner,
                votes_a=row.votes_a,
                votes_b=row.votes_b,
                references=row.references,
            )
            for row in bundle.pairs
        ],
        ["dataset", "external_id"],
        ["item", "caption_a", "caption_b", "category", "winner", "votes_a", "votes_b", "references"],
    )
    return _stale_remove(
        dataset,
        systems=[s.id for s in systems.values()],
        keep={
            "caption": _ids(captions),
            "judgment": _ids(judgments),
            "pair": _ids(pairs),
            "item": _ids(items.values()),
            "media": set(media.values()),
            "system": _ids(systems.values()),
        },
    )


def _media_store(dataset: Dataset, bundle: DatasetBundle) -> dict[str, int]:
    """Media rows by name. A checksum already known is kept when the new content carries none
    (a manifest may have been attached after the first import)."""
    with_md5 = [row for row in bundle.media if row.expected_md5]
    without_md5 = [row for row in bundle.media if not row.expected_md5]
    stored = _upsert(
        Media,
        [Media(dataset=dataset, **asdict(row)) for row in with_md5],
        ["dataset", "name"],
        ["kind", "expected_md5", "manifest_path", "url"],
    )
    stored += _upsert(
        Media, [Media(dataset=dataset, **asdict(row)) for row in without_md5], ["dataset", "name"], ["kind", "url"]
    )
    return {row.name: row.id for row in stored}


def _upsert(model: type[models.Model], rows: list, unique_fields: list[str], update_fields: list[str]) -> list:
    """INSERT ... ON CONFLICT DO UPDATE in batches; PostgreSQL hands back every row's id."""
    stored = []
    for start in range(0, len(rows), BATCH):
        stored += model._default_manager.bulk_create(
            rows[start : start + BATCH], update_conflicts=True, unique_fields=unique_fields, update_fields=update_fields
        )
    return stored


def _ids(rows: Iterable[models.Model]) -> set[int]:
    return {row.pk for row in rows}


def _stale_remove(dataset: Dataset, *, systems: list[int], keep: dict[str, set[int]]) -> dict[str, int]:
    """Delete what an earlier import stored and this one no longer has."""
    stale = {
        "pair": PairJudgment.objects.filter(dataset=dataset),
        "judgment": Judgment.objects.filter(caption__item__dataset=dataset, caption__system_id__in=systems),
        "caption": Caption.objects.filter(item__dataset=dataset, system_id__in=systems),
        "item": Item.objects.filter(dataset=dataset, captions__isnull=True),
        "system": System.objects.own().filter(dataset=dataset, captions__isnull=True),
        "media": Media.objects.filter(dataset=dataset, items__isnull=True, stored_path=""),
    }
    removed = {}
    for name, queryset in stale.items():
        doomed = set(queryset.values_list("id", flat=True)) - keep[name]
        removed[name] = len(doomed)
        for chunk in _chunks(sorted(doomed)):
            queryset.model._default_manager.filter(id__in=chunk).delete()
    return {name: count for name, count in removed.items() if count}


def _chunks(ids: list[int], size: int = BATCH) -> Iterable[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]
