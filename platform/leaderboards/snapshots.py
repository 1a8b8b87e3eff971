"""Precomputed captioner boards: one JSON document per dataset, rebuilt when a job of the dataset
ends, a submission's visibility changes or a live campaign's results are computed again, so a page
read is one row, not 8,000 scores."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections import Counter
from dataclasses import asdict
from typing import Any, Literal, overload

import numpy as np
import redis
from django.core.cache import cache
from django.db.models import F, Q

from campaigns.selectors import board_people
from capbench_eval.metaeval.agreement import krippendorff_alpha_interval
from catalog.models import Dataset, Judgment, System
from leaderboards.columns import metric_columns
from leaderboards.models import BoardSnapshot
from scoring.models import EvaluationJob
from scoring.selectors import system_values_shown
from scoring.services.numbers import mean_interval
from scoring.signatures import version_signatures


@overload
def board_payload(dataset: Dataset) -> dict: ...
@overload
def board_payload(dataset: Dataset, *, with_version: Literal[True]) -> tuple[dict, str | None]: ...
def board_payload(dataset: Dataset, *, with_version: bool = False) -> dict | tuple[dict, str | None]:
    """The dataset's snapshot (built now when it has none, or one of an older FORMAT); `with_version`:
    and its version (when it was built, as ISO text), None when it was built by this call."""
    found = BoardSnapshot.objects.filter(dataset=dataset).values_list("payload", "computed_at").first()
    if found is None or found[0].get("format") != FORMAT:
        payload, version = board_refresh(dataset_id=dataset.pk), None
    else:
        payload, version = found[0], found[1].isoformat()
    return (payload, version) if with_version else payload


# What a snapshot's payload holds changes with this number: one stored under an older one is built
# again when it is read (2: the people column's source, `people_source`; columns' `aggregation`;
# 3: a submission's submitter, date and integrity flags; 4: columns' and cells' metric `signature`).
FORMAT = 4


def board_refresh(*, dataset_id: int) -> dict:
    payload = board_build(Dataset.objects.get(pk=dataset_id))
    BoardSnapshot.objects.update_or_create(
        dataset_id=dataset_id, defaults={"payload": payload, "digests": payload_digests(payload)}
    )
    return payload


def digest_of(value: object) -> str:
    """A short digest of any JSON-able value (keys sorted)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:32]


def payload_digests(payload: dict) -> dict:
    """What a board's validator is made from, stored beside the payload so that a request never
    reads the payload to make one: the columns' digest, their slugs, and each row's digest with its
    system id, in the payload's order; the people column's label and campaign (renamed: the rows
    stay the same)."""
    return {
        "columns": digest_of(payload["columns"]),
        "people": digest_of([payload.get("people"), payload.get("people_campaign"), payload.get("people_source")]),
        "slugs": [column["slug"] for column in payload["columns"]],
        "rows": [[row["system"]["id"], digest_of(row)] for row in payload["rows"]],
    }


def board_build(dataset: Dataset) -> dict:
    columns = metric_columns()
    slugs = {column.slug for column in columns}
    systems = (
        System.objects.filter(dataset=dataset)
        .ranked()
        .order_by("name")
        .values(
            "id",
            "slug",
            "name",
            "kind",
            "is_baseline",
            "submission__id",
            "submission__paper_url",
            "submission__code_url",
            "submission__is_public",
            "submission__owner_id",
            "submission__owner__username",
            "submission__created_at",
            "submission__flags",
        )
    )
    rows: dict[int, dict[str, Any]] = {}
    for system in systems:
        submission = None
        if system["submission__id"] is not None:
            submission = {
                "id": system["submission__id"],
                "paper_url": system["submission__paper_url"],
                "code_url": system["submission__code_url"],
                "is_public": system["submission__is_public"],
                "owner_id": system["submission__owner_id"],
                "submitter": system["submission__owner__username"],  # the public name: the user name
                "submitted_at": system["submission__created_at"].isoformat(),
                "flags": system["submission__flags"] or [],
            }
        rows[system["id"]] = {
            "system": {key: system[key] for key in ("id", "slug", "name", "kind", "is_baseline")},
            "submission": submission,
            "cells": {
                slug: {"value": None, "state": "missing", "note": "", "low": None, "high": None} for slug in slugs
            },
        }
    open_jobs = (
        EvaluationJob.objects.filter(
            Q(system_id__in=rows) | Q(dataset=dataset, system__isnull=True),
            metric_version__metric__current_version=F("metric_version"),
        )
        .exclude(status=EvaluationJob.Status.DONE)
        .values_list("system_id", "metric_version__metric__slug", "status", "error")
    )
    for system_id, slug, status, error in open_jobs:
        targets = [rows[system_id]] if system_id else [row for row in rows.values() if row["submission"] is None]
        for row in targets:
            if slug in row["cells"]:
                row["cells"][slug].update(state=status, note=error)
    _numbers_shown(dataset, rows, {column.slug: column.signature for column in columns})
    people, source = _people(dataset, list(rows))
    for system_id, cell in people.items():
        rows[system_id]["people"] = cell
    return {
        "format": FORMAT,
        "columns": [asdict(column) for column in columns],
        "rows": list(rows.values()),
        **source,
    }


def _numbers_shown(dataset: Dataset, rows: dict[int, dict], signatures: dict[str, str]) -> None:
    """Each row's numbers (scoring.selectors.system_values_shown). A number of another metric version
    than its column's (the previous version's, shown while the current one is computed) carries
    that version's `signature`; the others read the column's."""
    shown = system_values_shown(dataset=dataset)
    versions = version_signatures({found.metric_version_id for found in shown.values()})
    for (system_id, slug), (version_id, value, low, high) in shown.items():
        row = rows.get(system_id)
        if row and slug in row["cells"] and value is not None and not math.isnan(value):
            row["cells"][slug].update(value=value, state="value", note="", low=low, high=high)
            if versions.get(version_id, "") != signatures[slug]:
                row["cells"][slug]["signature"] = versions.get(version_id, "")


def _people(dataset: Dataset, system_ids: list[int]) -> tuple[dict[int, dict], dict]:
    """The people column's cells and what it is made of: a campaign an organiser chose for the
    board once it is eligible (campaigns.selectors.board_people), else the dataset's imported
    judgments. `people` is what the header says, `people_campaign` the campaign (or None),
    `people_source` whose ratings, how many, their agreement, and a chosen campaign still short of
    the minimum (`pending`)."""
    chosen = board_people(dataset)
    live = chosen.column
    cells = {system: cell for system, cell in live.cells.items() if system in system_ids} if live else {}
    if live is not None and cells:
        campaign = live.campaign
        source = {
            "source": "campaign",
            "who": f"annotators of the live {'arena' if campaign.is_arena else 'campaign'} {campaign.title}",
            "ratings": live.answers_over(cells),  # those the cells shown are made of
            "alpha": _alpha_json(live.alpha),
            "alpha_note": live.alpha_note,
        }
        return cells, {
            "people": live.label,
            "people_campaign": {"slug": campaign.slug, "title": campaign.title, "mode": campaign.mode},
            "people_source": source,
        }
    cells, ratings = people_cells(dataset, system_ids)
    if not cells:
        pending = {"pending": chosen.pending} if chosen.pending else None
        return {}, {"people": None, "people_campaign": None, "people_source": pending}
    source = {
        "source": "judgments",
        "who": f"the judgments imported with {dataset.title}",
        "ratings": ratings,
        **_imported_agreement(dataset, system_ids),
        **({"pending": chosen.pending} if chosen.pending else {}),
    }
    return cells, {"people": dataset.people_dimension, "people_campaign": None, "people_source": source}


def _alpha_json(found: dict | None) -> dict | None:
    return None if not found else {key: found.get(key) for key in ("value", "low", "high")}


def _imported_agreement(dataset: Dataset, system_ids: list[int]) -> dict:
    """Krippendorff's α (interval level, captions as units) of the imported ratings the people
    column is made of, with its 95% interval; computed once per import of the dataset (kept in the
    cache under its content), not at every rebuild of its board."""
    dimension = dataset.people_dimension
    key = f"people-agreement:{dataset.pk}:{dataset.content_sha256 or dataset.updated_at.isoformat()}:{dimension}"
    try:
        kept = cache.get(key)
    except redis.RedisError:
        kept = None
    if kept is not None:
        return kept
    ratings: list[tuple[int, str, float]] = []
    seen: Counter = Counter()
    found = Judgment.objects.filter(caption__system_id__in=system_ids, dimension=dimension).order_by("id")
    for caption, annotator, value in found.values_list("caption_id", "annotator", "value").iterator():
        seen[caption] += 1
        ratings.append((caption, annotator or f"#{seen[caption]}", value))  # unnamed annotators: one each
    interval = krippendorff_alpha_interval(ratings, "interval") if ratings else None
    if interval is None or not math.isfinite(interval.value):
        agreement: dict[str, Any] = {
            "alpha": None,
            "alpha_note": "one rating per caption: no agreement between annotators to estimate",
        }
    else:
        bounds = [bound if math.isfinite(bound) else None for bound in (interval.low, interval.high)]
        agreement = {"alpha": {"value": interval.value, "low": bounds[0], "high": bounds[1]}, "alpha_note": ""}
    with contextlib.suppress(redis.RedisError):
        cache.set(key, agreement, timeout=30 * 24 * 3600)  # (a re-import keys it anew)
    return agreement


def people_cells(dataset: Dataset, system_ids: list[int]) -> tuple[dict[int, dict], int]:
    """Per system whose captions people rated (on the dataset's people_dimension): the mean rating
    with its 95% interval, images resampled (scoring's mean_interval); and the ratings counted."""
    dimension = dataset.people_dimension
    if dimension is None:
        return {}, 0
    ratings: dict[int, list[tuple[float, int]]] = {}
    found = (
        Judgment.objects.filter(caption__system_id__in=system_ids, dimension=dimension)
        .order_by("caption__system_id", "caption__item_id", "id")
        .values_list("caption__system_id", "value", "caption__item_id")
    )
    for system_id, value, item_id in found.iterator():
        ratings.setdefault(system_id, []).append((value, item_id))
    cells = {}
    for system_id, pairs in ratings.items():
        values = np.array([value for value, _ in pairs], dtype=float)
        low, high = mean_interval(values, [item for _, item in pairs])
        cells[system_id] = {
            "value": float(values.mean()),
            "state": "value",
            "note": f"{len(values):,} ratings",
            "low": low,
            "high": high,
        }
    return cells, sum(len(pairs) for pairs in ratings.values())
