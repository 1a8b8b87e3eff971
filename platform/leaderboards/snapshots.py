"""Precomputed captioner boards: one JSON document per dataset, rebuilt when a job of the dataset
ends, a submission's visibility changes or a live campaign's results are computed again, so a page
read is one row, not 8,000 scores."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict
from typing import Any, Literal, overload

import numpy as np
from django.db.models import F, Q

from campaigns.selectors import board_people
from catalog.models import Dataset, Judgment, System
from leaderboards.columns import metric_columns
from leaderboards.models import BoardSnapshot
from scoring.models import EvaluationJob
from scoring.selectors import system_values_shown
from scoring.services.finalize import mean_interval


@overload
def board_payload(dataset: Dataset) -> dict: ...
@overload
def board_payload(dataset: Dataset, *, with_version: Literal[True]) -> tuple[dict, str | None]: ...
def board_payload(dataset: Dataset, *, with_version: bool = False) -> dict | tuple[dict, str | None]:
    """The dataset's snapshot (built now when it has none); `with_version`: and its version (when it
    was built, as ISO text), None when it was built by this call."""
    found = BoardSnapshot.objects.filter(dataset=dataset).values_list("payload", "computed_at").first()
    if found is None:
        payload, version = board_refresh(dataset_id=dataset.pk), None
    else:
        payload, version = found[0], found[1].isoformat()
    return (payload, version) if with_version else payload


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
        "people": digest_of([payload.get("people"), payload.get("people_campaign")]),
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
    for (system_id, slug), (_, value, low, high) in system_values_shown(dataset=dataset).items():
        shown = rows.get(system_id)
        if shown and slug in shown["cells"] and value is not None and not math.isnan(value):
            shown["cells"][slug].update(value=value, state="value", note="", low=low, high=high)
    # A live campaign's column, where one has numbers, stands for people; else the imported judgments.
    live = board_people(dataset)
    people = {system: cell for system, cell in live.cells.items() if system in rows} if live else {}
    campaign = live.campaign if live and people else None
    label = live.label if live and people else None
    if not people:
        people = people_cells(dataset, list(rows))
        label = dataset.people_dimension if people else None
    for system_id, cell in people.items():
        rows[system_id]["people"] = cell
    return {
        "columns": [asdict(column) for column in columns],
        "rows": list(rows.values()),
        "people": label,  # what the board says under its "People" header
        "people_campaign": None
        if campaign is None
        else {"slug": campaign.slug, "title": campaign.title, "mode": campaign.mode},
    }


def people_cells(dataset: Dataset, system_ids: list[int]) -> dict[int, dict]:
    """Per system whose captions people rated (on the dataset's people_dimension): the mean rating
    with its 95% interval, images resampled (scoring's mean_interval)."""
    dimension = dataset.people_dimension
    if dimension is None:
        return {}
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
        low = high = None
        if len({item for _, item in pairs}) > 1:
            low, high = mean_interval(values, [item for _, item in pairs])
        cells[system_id] = {
            "value": float(values.mean()),
            "state": "value",
            "note": f"{len(values):,} ratings",
            "low": low,
            "high": high,
        }
    return cells
