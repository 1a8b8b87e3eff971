"""A board as JSON and as CSV made from that JSON: the page's downloads, the API's answers and a
citable snapshot's files are the same text for the same board (docs/api.md, "Numbers": every
number native and in points side by side; the CSV in points, as the pages show them)."""

from __future__ import annotations

import csv
import io
from collections.abc import Set as AbstractSet

from leaderboards.captioner import CaptionerBoardPage, Cell, PeopleColumn
from leaderboards.metric_board import MetricBoardPage, MetricBoardQuery, metric_board_page
from plumbing.spreadsheets import spreadsheet_row
from scoring.shown import Shown


def board_json(page: CaptionerBoardPage, *, staff: bool = False) -> dict:
    """The board as JSON: each cell's value and 95% interval on the metric's scale and in points
    (what the pages show), its state, its rank by the sorted column; a cell's note (the job's
    error) only for staff. Per system who submitted it and when (null: the dataset's own), its
    paper and code links, and its integrity `flags` (submissions.integrity). `domain`: the subset
    of images the numbers are over (null: all).
    `people_column`: what the people column shows and whose ratings it is made of."""
    people = page.people
    return {
        "dataset": page.dataset.slug,
        "domain": page.subset,
        "headline_metric": page.dataset.headline_metric,
        "sorted_by": page.sort,
        "people_dimension": people.label if people else None,
        "people_campaign": people.campaign if people else None,
        "people_column": people_json(people),
        "people_pending": page.people_pending or None,
        "metrics": [
            {
                "slug": c.slug,
                "name": c.name,
                "family": c.family,
                "higher_is_better": c.higher_is_better,
                "points": c.points,
                "aggregation": c.aggregation,
                "signature": c.signature,
            }
            for c in page.columns
        ],
        "systems": [
            {
                "rank": row.rank,
                "system": row.system.slug,
                "name": row.system.name,
                "kind": row.system.kind,
                "baseline": row.system.is_baseline,
                "paper_url": row.submission.paper_url if row.submission else "",
                "code_url": row.submission.code_url if row.submission else "",
                "submitted_by": (row.submission.submitter or None) if row.submission else None,
                "submitted_at": (row.submission.submitted_at or None) if row.submission else None,
                "flags": [flag.json() for flag in row.submission.flags] if row.submission else [],
                **({"people": cell_json(row.people, staff=False)} if people and row.people else {}),
                "scores": {slug: cell_json(cell, staff=staff) for slug, cell in row.cells.items()},
            }
            for row in page.rows
        ],
    }


def people_json(people: PeopleColumn | None) -> dict | None:
    if people is None:
        return None
    return {
        "shows": people.label,
        "kind": people.source,
        "who": people.who,
        "ratings": people.ratings,
        "alpha": None if people.alpha is None else people.alpha.json(),
        "alpha_note": people.alpha_note,
        "campaign": people.campaign,
    }


def cell_json(cell: Cell, *, staff: bool) -> dict:
    """A board cell: its number (scoring.shown: value, low, high, and the three in points; null
    without a number), its state, its rank where the board is sorted by it, and the note for staff."""
    return {
        **cell.shown.json(),
        "state": cell.state,
        **({"rank": cell.rank} if cell.rank is not None else {}),
        **({"note": cell.note} if cell.note and staff else {}),
        **({"signature": cell.signature} if cell.signature and cell.state == "value" else {}),
    }


def metric_board_json(query: MetricBoardQuery, *, extra: AbstractSet[str] = frozenset()) -> dict:
    """The metric board for `query` as JSON (metric_board_page_json)."""
    return metric_board_page_json(metric_board_page(query, extra=extra))


def metric_board_page_json(page: MetricBoardPage) -> dict:
    """The board as the page shows it, rows in the page's order: what it is sorted by (`sort`, a
    column's `key` or "metric") and which way (`order`); each cell's correlation and interval
    (native, and ×100 as the board shows it), n, significance cluster (`rank`, 1 = best) and, where
    the papers report one for the same rows, their number (`published`, ×100); a submitted metric's
    owner, links and whether only the caller sees it (`private`: its rank is where it would stand
    among the public metrics)."""
    query, headers = page.query, page.headers
    return {
        "protocol": query.protocol,
        "level": query.level,
        "sort": query.sort,
        "order": "desc" if page.descending else "asc",
        "columns": [
            {
                "key": h.param,
                "dataset": h.dataset.slug,
                "dimension": h.dimension,
                "statistic": h.statistic,
                "protocol": h.protocol,
                "campaign": None if h.campaign is None else {"slug": h.campaign.slug, "title": h.campaign.title},
            }
            for h in headers
        ],
        "metrics": [
            {
                "metric": row.column.slug,
                "family": row.column.family,
                "signature": row.column.signature,
                "submitted": None
                if not row.column.submitted_by
                else {
                    "owner": row.column.submitted_by,
                    "paper_url": row.column.paper_url,
                    "code_url": row.column.code_url,
                    "private": row.column.private,
                    "trained_on": [h.dataset.slug for h in headers if h.dataset.pk in row.column.trained_on],
                },
                "cells": [
                    None
                    if r is None
                    else {
                        **Shown(r.value, r.low, r.high, CORRELATION_POINTS).json(),
                        "n": r.n,
                        "rank": rank,
                        **({"published": published} if published is not None else {}),
                    }
                    for r, published, rank in row.cells_and_published
                ],
            }
            for row in page.rows
        ],
    }


CORRELATION_POINTS = 100.0  # a correlation or accuracy as the metric board shows it (×100)


def board_csv_text(board: dict) -> str:
    """One row per system: rank, names, then per metric its number in points, as the page shows it,
    and its interval's ends (empty where it has none); the people column where shown; last, per
    metric, `<slug>_signature`: the signature of the metric version its number was computed with
    (empty without a number). Those come after every other column, so that readers by name or by
    position of the columns before keep working; a snapshot frozen before boards carried signatures
    has none. Text cells are neutralised against formula injection; numbers are written as numbers."""
    out = io.StringIO()
    writer = csv.writer(out)
    people = board.get("people_dimension")
    head = ["rank", "system", "name", "kind", "baseline"]
    if people:
        named = (board.get("people_campaign") or {}).get("slug") or people  # a campaign's label is a sentence
        head += [f"people_{named}", f"people_{named}_low", f"people_{named}_high"]
    for metric in board["metrics"]:
        head += [metric["slug"], f"{metric['slug']}_low", f"{metric['slug']}_high"]
    signed = any("signature" in metric for metric in board["metrics"])
    if signed:
        head += [f"{metric['slug']}_signature" for metric in board["metrics"]]
    writer.writerow(spreadsheet_row(head))
    for system in board["systems"]:
        line = [system["rank"], system["system"], system["name"], system["kind"], system["baseline"]]
        if people:
            line += _cell(system.get("people"), 1)
        for metric in board["metrics"]:
            line += _cell(system["scores"].get(metric["slug"]), metric["points"])
        if signed:
            line += [_signature(system["scores"].get(metric["slug"]), metric) for metric in board["metrics"]]
        writer.writerow(spreadsheet_row(line))
    return out.getvalue()


def _cell(cell: dict | None, scale: float) -> list:
    """A cell's number and interval in points, 4 decimals (a snapshot frozen before cells carried
    their points: from the value × the metric's points)."""
    if cell is None or cell.get("value") is None or cell.get("state") != "value":
        return ["", "", ""]
    shown = []
    for native, displayed in (("value", "points"), ("low", "low_points"), ("high", "high_points")):
        number = cell.get(displayed) if displayed in cell else _times(cell.get(native), scale)
        shown.append("" if number is None else round(number, 4))
    return shown


def _signature(cell: dict | None, metric: dict) -> str:
    """The signature of the version a cell's number was computed with: its own where it has one
    (a number of the previous version, shown while the current one is computed), else its column's."""
    if cell is None or cell.get("value") is None or cell.get("state") != "value":
        return ""
    return cell.get("signature") or metric.get("signature") or ""


def _times(value: float | None, scale: float) -> float | None:
    return Shown(value, scale=scale).points
