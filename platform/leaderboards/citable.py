"""Citable snapshots: a board frozen as anonymous visitors see it, numbered per board, with what its
numbers were computed from, so a paper can cite a table that never changes (docs/citing.md)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from datetime import date

from django.contrib.auth.models import AnonymousUser
from django.db import transaction
from django.db.models import F, Max
from django.urls import reverse

from catalog.citations import absolute
from catalog.models import Dataset, System
from leaderboards.captioner import captioner_board_page
from leaderboards.exports import CORRELATION_POINTS, board_csv_text, board_json, metric_board_json
from leaderboards.metric_board import LEVELS, PROTOCOLS, MetricBoardQuery
from leaderboards.models import CitableSnapshot
from leaderboards.snapshots import board_refresh
from plumbing import bibtex
from plumbing.errors import ApplicationError
from plumbing.spreadsheets import spreadsheet_row
from scoring.models import CorrelationResult, Metric
from scoring.shown import Shown
from scoring.signatures import version_signature

NOTE_MAX_CHARS = 2000
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # (a NUL is no text PostgreSQL stores)
WITHDRAWN = "(withdrawn or made private since)"


class FreezeRefused(ApplicationError, ValueError):
    """A board that cannot be frozen (a private dataset's), in words for the page."""


def snapshot_freeze(*, dataset: Dataset | None, by: str, note: str = "") -> CitableSnapshot:
    """Freeze the captioner board of `dataset` (None: the metric board) as the next numbered
    snapshot. The board is built afresh first, then read as an anonymous visitor reads it: only
    public systems and public metrics, never a cell's staff-only note."""
    if dataset is not None and not Dataset.objects.visible_to(AnonymousUser()).filter(pk=dataset.pk).exists():
        raise FreezeRefused("only a public dataset's board can be cited: publish the dataset first")
    note = CONTROL.sub("", note).strip()[:NOTE_MAX_CHARS]
    if dataset is None:
        payload, provenance = _metric_board()
    else:
        payload, provenance = _captioner_board(dataset)
    digest = hashlib.sha256(json.dumps([payload, provenance], sort_keys=True).encode()).hexdigest()
    board = CitableSnapshot.Board.METRIC if dataset is None else CitableSnapshot.Board.CAPTIONER
    with transaction.atomic():
        # One freeze at a time per board: the number is the last one + 1.
        if dataset is not None:
            Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        else:
            transaction.get_connection().cursor().execute(
                "SELECT pg_advisory_xact_lock(hashtext('metric-board-freeze'))"
            )
        last = CitableSnapshot.objects.filter(board=board, dataset=dataset).aggregate(last=Max("number"))["last"]
        return CitableSnapshot.objects.create(
            board=board,
            dataset=dataset,
            number=(last or 0) + 1,
            created_by=by,
            note=note,
            payload=payload,
            provenance=provenance,
            digest=digest,
        )


def _captioner_board(dataset: Dataset) -> tuple[dict, dict]:
    """The board as the live page's JSON gives it to an anonymous visitor (the same page model,
    numbers and intervals; the people column with whose ratings it froze)."""
    payload = board_refresh(dataset_id=dataset.pk)
    page = captioner_board_page(dataset, {}, viewer=AnonymousUser(), payload=payload)
    board = board_json(page, staff=False)
    metrics = _metric_versions(column.slug for column in page.columns)
    provenance = {
        "datasets": {dataset.slug: _dataset_provenance(dataset)},
        "metrics": metrics,
        "protocols": [],
    }
    return board, provenance


def _metric_board() -> tuple[dict, dict]:
    boards = []
    for protocol in PROTOCOLS:
        for level in LEVELS:
            found = metric_board_json(MetricBoardQuery(protocol, level))
            boards.append({"level": level, **found})
    slugs = {row["metric"] for found in boards for row in found["metrics"]}
    datasets = {column["dataset"] for found in boards for column in found["columns"]}
    protocols = sorted(
        set(
            CorrelationResult.objects.filter(
                metric_version=F("metric_version__metric__current_version"),
                metric_version__metric__slug__in=slugs,
                dataset__slug__in=datasets,
            ).values_list("protocol", flat=True)
        )
    )
    provenance = {
        "datasets": {
            d.slug: _dataset_provenance(d) for d in Dataset.objects.filter(slug__in=datasets).order_by("slug")
        },
        "metrics": _metric_versions(slugs),
        "protocols": protocols,
    }
    return {"boards": boards}, provenance


def _dataset_provenance(dataset: Dataset) -> dict:
    return {
        "title": dataset.title,
        "content_sha256": dataset.content_sha256,
        "protocol_version": dataset.protocol_version,
        "source_format": dataset.source_format,
    }


def _metric_versions(slugs) -> dict:
    """Per metric its current version, configuration hash and signature (scoring.signatures; a
    snapshot frozen before signatures has none: its page and downloads read it as absent)."""
    found = Metric.objects.filter(slug__in=set(slugs)).select_related("current_version").order_by("slug")
    versions = {}
    for metric in found:
        current = metric.current_version
        if current is not None:
            current.metric = metric  # (its signature reads the metric: no query of its own)
        versions[metric.slug] = {
            "version": current.version if current else None,
            "config_hash": current.config_hash if current else None,
            "signature": version_signature(current) if current else None,
        }
    return versions


def shown_payload(snapshot: CitableSnapshot) -> dict:
    """The frozen board as it is shown now: its numbers and ranks as frozen, but a system or a
    submitted metric that has since been withdrawn or made private loses its name, links and owner
    (`"withdrawn": true`): a snapshot never republishes what its owner took back. One still public
    is named with its owner's name as it is now (an account deleted with its public work kept shows
    "anonymous author": accounts.services.closing). The digest stays that of the payload as frozen."""
    payload = snapshot.payload
    if snapshot.dataset is not None:
        owners = dict(
            System.objects.visible_to(AnonymousUser())
            .filter(dataset=snapshot.dataset)
            .values_list("slug", "submission__owner__username")
        )
        systems = [
            _owner_now(row, "submitted_by", owners[row["system"]])
            if row["system"] in owners
            else {
                **row,
                "system": "",
                "name": WITHDRAWN,
                "paper_url": "",
                "code_url": "",
                "submitted_by": None,
                "withdrawn": True,
            }
            for row in payload["systems"]
        ]
        return with_points({**payload, "systems": systems})
    metric_owners = dict(Metric.objects.visible_to(AnonymousUser()).values_list("slug", "submission__owner__username"))
    boards = [
        {
            **found,
            "metrics": [
                _metric_owner_now(row, metric_owners[row["metric"]])
                if row["metric"] in metric_owners
                else {**_unsigned(row), "metric": WITHDRAWN, "submitted": None, "withdrawn": True}
                for row in found["metrics"]
            ],
        }
        for found in payload["boards"]
    ]
    return {"boards": boards}


def _unsigned(row: dict) -> dict:
    """A metric board row without its signature (which begins with the metric's slug)."""
    return {key: value for key, value in row.items() if key != "signature"}


def _owner_now(row: dict, key: str, owner: str | None) -> dict:
    return {**row, key: owner} if row.get(key) and owner and row[key] != owner else row


def _metric_owner_now(row: dict, owner: str | None) -> dict:
    submitted = row.get("submitted")
    return {**row, "submitted": _owner_now(submitted, "owner", owner)} if submitted else row


def with_points(board: dict) -> dict:
    """A captioner board frozen before its cells carried their points (docs/api.md "Numbers"): each
    cell's value and interval also in points, from the frozen metric's `points`; the frozen numbers
    themselves unchanged (the digest is of the payload as frozen)."""
    scale = {metric["slug"]: metric.get("points", 1.0) for metric in board["metrics"]}

    def cell(found: dict | None, times: float) -> dict | None:
        if found is None or "points" in found:
            return found
        shown = Shown(found.get("value"), found.get("low"), found.get("high"), times)
        return {**found, "points": shown.points, "low_points": shown.low_points, "high_points": shown.high_points}

    systems = [
        {
            **row,
            "scores": {slug: cell(found, scale.get(slug, 1.0)) for slug, found in row["scores"].items()},
            **({"people": cell(row["people"], 1.0)} if row.get("people") else {}),
        }
        for row in board["systems"]
    ]
    return {**board, "systems": systems}


def columns_with_numbers(board: dict) -> tuple[list[dict], list[str]]:
    """A captioner board's metric columns that hold a number for some system (what the page's table
    shows), and the names of the others."""

    def numbered(metric: dict) -> bool:
        return any((row["scores"].get(metric["slug"]) or {}).get("state") == "value" for row in board["systems"])

    shown = [metric for metric in board["metrics"] if numbered(metric)]
    return shown, [metric["name"] for metric in board["metrics"] if not numbered(metric)]


def ranked_by(board: dict) -> str:
    """The name of the column a frozen captioner board's ranks are by ("" where it does not say:
    frozen before boards said so, or no system had a number)."""
    sort = board.get("sorted_by")
    return "people" if sort == "people" else next((m["name"] for m in board["metrics"] if m["slug"] == sort), "")


def public_metric_slugs() -> set[str]:
    return set(Metric.objects.visible_to(AnonymousUser()).values_list("slug", flat=True))


def shown_provenance(snapshot: CitableSnapshot, *, public_metrics: set[str] | None = None) -> dict:
    """The provenance as shown now: a submitted metric withdrawn or made private since is left out.
    `public_metrics`: public_metric_slugs(), when the caller has read it (a list of snapshots)."""
    visible = public_metric_slugs() if public_metrics is None else public_metrics
    metrics = {slug: found for slug, found in snapshot.provenance["metrics"].items() if slug in visible}
    return {**snapshot.provenance, "metrics": metrics}


def snapshot_json(snapshot: CitableSnapshot) -> dict:
    """The snapshot's JSON download: what it is, where, its digest and provenance, and the board."""
    return {
        "board": snapshot.board,
        "dataset": board_key(snapshot) if snapshot.dataset is not None else None,
        "number": snapshot.number,
        "created_at": snapshot.created_at.isoformat(),
        "title": snapshot_title(snapshot),
        "note": snapshot.note,
        "url": absolute(snapshot_url(snapshot)),
        "live": absolute(live_url(snapshot)),
        "digest": snapshot.digest,
        "provenance": shown_provenance(snapshot),
        "board_json": shown_payload(snapshot),
    }


def snapshot_csv(snapshot: CitableSnapshot) -> str:
    """The snapshot as CSV: the captioner board's columns (as the live board's CSV), or for the
    metric board one row per cell (protocol, level, metric, dataset, dimension, statistic, value and
    interval as computed and ×100 as the board shows them, n, significance cluster, and the column's
    protocol key: a live campaign's own)."""
    shown = shown_payload(snapshot)
    if snapshot.board == CitableSnapshot.Board.CAPTIONER:
        return board_csv_text(shown)
    out = io.StringIO()
    writer = csv.writer(out)
    head = ["protocol", "level", "metric", "family", "dataset", "dimension", "statistic", "value", "low", "high"]
    writer.writerow(spreadsheet_row([*head, "points", "low_points", "high_points", "n", "rank", "protocol_key"]))
    for found in shown["boards"]:
        for row in found["metrics"]:
            for column, cell in zip(found["columns"], row["cells"], strict=True):
                if cell is None:
                    continue
                number = Shown(cell["value"], cell["low"], cell["high"], CORRELATION_POINTS)  # (×100, as the board)
                values = [
                    cell["value"],
                    cell["low"],
                    cell["high"],
                    number.points,
                    number.low_points,
                    number.high_points,
                ]
                values += [cell["n"], cell["rank"]]
                writer.writerow(
                    spreadsheet_row(
                        [
                            found["protocol"],
                            found["level"],
                            row["metric"],
                            row["family"],
                            column["dataset"],
                            column["dimension"],
                            column["statistic"],
                            *values,
                            column.get("protocol", ""),  # (a snapshot frozen before columns named it: none)
                        ]  # fmt: skip
                    )
                )
    return out.getvalue()


def snapshot_url(snapshot: CitableSnapshot) -> str:
    if snapshot.dataset is None:
        return reverse("leaderboards:metric-snapshot", args=[snapshot.number])
    return reverse("leaderboards:snapshot", args=[snapshot.dataset.slug, snapshot.number])


def list_url(dataset: Dataset | None) -> str:
    return (
        reverse("leaderboards:metric-snapshots")
        if dataset is None
        else reverse("leaderboards:snapshots", args=[dataset.slug])
    )


def board_url(dataset: Dataset | None) -> str:
    """The live board's path: `dataset`'s captioner board, or (None) the metric board."""
    return (
        reverse("leaderboards:metrics") if dataset is None else reverse("leaderboards:captioner", args=[dataset.slug])
    )


def live_url(snapshot: CitableSnapshot) -> str:
    return board_url(snapshot.dataset)


def snapshot_title(snapshot: CitableSnapshot) -> str:
    """Its title, from what was stored when it was frozen (a dataset renamed since does not change it)."""
    if snapshot.dataset is None:
        return f"CapBench metric board, snapshot {snapshot.number}"
    (slug, frozen), *_ = snapshot.provenance["datasets"].items()
    return f"CapBench {frozen['title']} captioner board, snapshot {snapshot.number}"


def board_key(snapshot: CitableSnapshot) -> str:
    return "metrics" if snapshot.dataset is None else next(iter(snapshot.provenance["datasets"]))


def snapshot_bibtex(snapshot: CitableSnapshot, *, url: str) -> str:
    """A BibTeX entry for the snapshot at `url` (its page's absolute address)."""
    frozen: date = snapshot.created_at.date()
    board = board_key(snapshot)
    fields = [
        ("author", "{CapBench contributors}"),
        ("title", bibtex.title_value(snapshot_title(snapshot))),
        ("year", str(frozen.year)),
        ("howpublished", f"\\url{{{bibtex.url_value(url)}}}"),
        ("url", bibtex.url_value(url)),
        ("note", bibtex.escape(f"frozen {frozen.isoformat()}; sha256 {snapshot.digest[:16]}")),
    ]
    return bibtex.render(
        [bibtex.Entry("misc", bibtex.fallback_key(f"{board}-snapshot-{snapshot.number}"), tuple(fields))]
    )
