"""A board as JSON and as CSV made from that JSON: the page's downloads, the API's answers and a
citable snapshot's files are the same text for the same board."""

from __future__ import annotations

import csv
import io
from collections.abc import Set as AbstractSet

from capbench.spreadsheets import spreadsheet_row
from leaderboards import selectors


def _clean(value: float | None) -> float | None:
    """A number without float noise (12 significant digits: 7.407407407401921e-19 → 7.4074074074e-19
    stays a number, 0.30000000000000004 → 0.3)."""
    return None if value is None else float(f"{value:.12g}")


def board_json(
    dataset,
    columns,
    rows,
    *,
    staff: bool = False,
    people: str | None = None,
    people_campaign: dict | None = None,
    subset: str | None = None,
) -> dict:
    """The board as JSON: raw values (0–1 metrics as 0–1) with `points`, what the pages multiply
    them by, and each value's 95% interval; a cell's note (the job's error) only for staff.
    `domain`: the subset of images the numbers are computed over (null: all). `people_dimension`:
    what the people column shows (a dimension of the imported judgments, or a live campaign's
    label), `people_campaign` that campaign (slug, title, mode) or null."""
    return {
        "dataset": dataset.slug,
        "domain": subset,
        "headline_metric": dataset.headline_metric,
        "people_dimension": people,
        "people_campaign": people_campaign if people else None,
        "metrics": [
            {
                "slug": c.slug,
                "name": c.name,
                "family": c.family,
                "higher_is_better": c.higher_is_better,
                "points": c.points,
            }
            for c in columns
        ],
        "systems": [
            {
                "rank": row.rank,
                "system": row.system.slug,
                "name": row.system.name,
                "kind": row.system.kind,
                "baseline": row.system.is_baseline,
                "paper_url": getattr(row.submission, "paper_url", "") if row.submission else "",
                "code_url": getattr(row.submission, "code_url", "") if row.submission else "",
                **({"people": _json_cell(row.people, staff=False)} if people and row.people else {}),
                "scores": {slug: _json_cell(cell, staff=staff) for slug, cell in row.cells.items()},
            }
            for row in rows
        ],
    }


def _json_cell(cell: selectors.Cell, *, staff: bool) -> dict:
    return {
        "value": _clean(cell.value),
        "state": cell.state,
        **({"note": cell.note} if cell.note and staff else {}),
        **({"low": _clean(cell.low), "high": _clean(cell.high)} if cell.low is not None else {}),
    }


def metric_board_json(query: selectors.MetricBoardQuery, *, extra: AbstractSet[str] = frozenset()) -> dict:
    """Each cell's value, interval, n and significance cluster (`rank`, 1 = best); a submitted
    metric's owner, links and whether only the caller sees it (`private`: its rank is where it would
    stand among the public metrics)."""
    headers, rows = selectors.metric_board(
        protocol_name=query.protocol, level=query.level, family=query.family, reference=query.reference, extra=extra
    )
    return {
        "protocol": query.protocol,
        "columns": [
            {
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
                    None if r is None else {"value": r.value, "low": r.low, "high": r.high, "n": r.n, "rank": rank}
                    for r, rank in zip(row.values, row.ranks, strict=True)
                ],
            }
            for row in rows
        ],
    }


def board_csv_text(board: dict) -> str:
    """One row per system: rank, names, then per metric its number as the page shows it (×points,
    4 decimals) and its interval's ends (empty where it has none); the people column where shown.
    Text cells are neutralised against formula injection; scores are written as numbers."""
    out = io.StringIO()
    writer = csv.writer(out)
    people = board.get("people_dimension")
    head = ["rank", "system", "name", "kind", "baseline"]
    if people:
        named = (board.get("people_campaign") or {}).get("slug") or people  # a campaign's label is a sentence
        head += [f"people_{named}", f"people_{named}_low", f"people_{named}_high"]
    for metric in board["metrics"]:
        head += [metric["slug"], f"{metric['slug']}_low", f"{metric['slug']}_high"]
    writer.writerow(spreadsheet_row(head))
    for system in board["systems"]:
        line = [system["rank"], system["system"], system["name"], system["kind"], system["baseline"]]
        if people:
            line += _cell(system.get("people"), 1)
        for metric in board["metrics"]:
            line += _cell(system["scores"].get(metric["slug"]), metric["points"])
        writer.writerow(spreadsheet_row(line))
    return out.getvalue()


def _cell(cell: dict | None, scale: float) -> list:
    if cell is None or cell.get("value") is None or cell.get("state") != "value":
        return ["", "", ""]
    return [round(cell[key] * scale, 4) if cell.get(key) is not None else "" for key in ("value", "low", "high")]
