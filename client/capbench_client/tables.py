"""Plain aligned text tables, and the results card and board written as them."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from capbench_client.terminal import shown

NUMBER = re.compile(r"^[-+]?[\d,.]+")


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; a column whose cells start with a number is right-aligned.
    A cell's control characters (a line break too) are written as escapes (terminal.shown)."""
    head = [shown(cell) for cell in head]
    rows = [[shown(cell) for cell in row] for row in rows]
    widths = [max([len(head[i]), *(len(row[i]) for row in rows)]) for i in range(len(head))]
    right = [bool(rows) and all(row[i] in ("", "–") or NUMBER.match(row[i]) for row in rows) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right, strict=True)]
        return "  ".join(padded).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def number(value: Any, digits: int = 1) -> str:
    """A number with `digits` decimals; "–" for none (null, NaN)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return "–"
    return f"{value:.{digits}f}"


def interval(low: Any, high: Any, digits: int = 1) -> str:
    if number(low) == "–" or number(high) == "–":
        return ""
    return f"{number(low, digits)}–{number(high, digits)}"


def results_text(card: dict[str, Any]) -> str:
    """A results answer (Client.results) as a table: metric, value in points, 95% interval, rank of n;
    then the metrics still being scored and those without a number."""
    lines = [
        shown(
            f"Submission {card.get('submission')} on {card.get('dataset')} "
            f"(system {card.get('system')}): {card.get('status')}"
        )
    ]
    rows = []
    for result in card.get("results") or []:
        rank, among = result.get("rank"), result.get("ranked")
        if not isinstance(among, int) or isinstance(among, bool):
            among = (card.get("public_systems") or 0) + 1
        place = f"{rank} of {among}" + (" (tied)" if result.get("tied") else "") if rank is not None else ""
        rows.append(
            [
                str(result.get("name") or result.get("metric")),
                number(result.get("points")),
                interval(result.get("low_points"), result.get("high_points")),
                place,
            ]
        )
    if rows:
        lines += ["", table(["metric", "value", "95% interval", "rank"], rows)]
    for key, title in (("pending", "still scoring"), ("missing", "no number")):
        entries = card.get(key) or []
        if entries:
            lines += ["", f"{title}:"]
        for entry in entries:
            count = f" ({entry.get('done', 0):,}/{entry.get('total', 0):,})" if entry.get("total") else ""
            name = entry.get("name") or entry.get("metric")
            lines.append(shown(f"  {name}: {entry.get('words') or entry.get('status')}{count}"))
    return "\n".join(lines)


def board_text(board: dict[str, Any], *, top: int = 20, columns: int = 4) -> str:
    """A board answer (Client.board) as a table: rank, name, then up to `columns` metrics in points,
    as the site shows them, each with its 95% interval (the column the board is sorted by first, then
    the headline metric, then the board's order; only metrics with a number among the shown
    systems), for the `top` systems."""
    metrics = [m for m in board.get("metrics") or [] if isinstance(m, dict)]
    first = (board.get("sorted_by"), board.get("headline_metric"))
    metrics.sort(key=lambda m: (m.get("slug") != first[0], m.get("slug") != first[1]))  # stable otherwise
    systems = [s for s in board.get("systems") or [] if isinstance(s, dict)]
    shown_systems = systems[:top]

    def cell(system: dict[str, Any], metric: dict[str, Any]) -> dict[str, Any]:
        found = (system.get("scores") or {}).get(metric.get("slug")) or {}
        return found if isinstance(found, dict) else {}

    scored = [m for m in metrics if any(number(cell(s, m).get("points")) != "–" for s in shown_systems)]
    chosen = (scored or metrics[:1])[:columns]
    rows = []
    for system in shown_systems:
        kind = " (baseline)" if system.get("baseline") else ""
        cells = [_with_interval(cell(system, metric)) for metric in chosen]
        rows.append([str(system.get("rank") or ""), f"{system.get('name')}{kind}", *cells])
    head = ["rank", "system", *(str(m.get("name") or m.get("slug")) for m in chosen)]
    domain = f", {board['domain']} images" if board.get("domain") else ""
    ranked = next((str(m.get("name")) for m in metrics if m.get("slug") == board.get("sorted_by")), "")
    by = f", ranked by {ranked}" if ranked else ""
    text = [
        shown(f"{board.get('dataset')}{domain}: {len(systems)} systems{by} (points, 95% interval in brackets)"),
        "",
        table(head, rows),
    ]
    if len(systems) > top:
        text.append(f"… and {len(systems) - top} more (--csv for all)")
    return "\n".join(text)


def _with_interval(cell: dict[str, Any]) -> str:
    """A board cell in points with its interval beneath it on the page, beside it here: "8.8 (7.2–10.6)"."""
    value = number(cell.get("points"))
    around = interval(cell.get("low_points"), cell.get("high_points"))
    return f"{value} ({around})" if value != "–" and around else value


def progress_text(state: dict[str, Any]) -> str:
    """A progress answer (Client.progress) as a table: per metric its state and captions scored;
    the metrics the server does not compute named once, below."""
    listed = [m for m in state.get("metrics") or [] if isinstance(m, dict)]
    rows = [
        [str(m.get("name") or m.get("metric")), str(m.get("status")), f"{m.get('done', 0):,}/{m.get('total', 0):,}"]
        for m in listed
        if m.get("status") != "unavailable"
    ]
    head = shown(f"Submission {state.get('submission')}: {state.get('status')}")
    lines = [head, "", table(["metric", "state", "scored"], rows)] if rows else [head]
    not_here = state.get("not_computed_here") or ", ".join(
        str(m.get("name") or m.get("metric"))
        for m in [*listed, *(state.get("unavailable") or [])]
        if isinstance(m, dict) and (m.get("status") in (None, "unavailable"))
    )
    if not_here:
        lines += ["", shown(f"Not computed on this server: {not_here}.")]
    return "\n".join(lines)
