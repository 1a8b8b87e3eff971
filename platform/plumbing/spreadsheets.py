"""CSV cells a spreadsheet will not run: OWASP's advice against CSV (formula) injection.

A spreadsheet opening a CSV file treats a cell that begins with `=`, `+`, `-` or `@` (or a tab or
carriage return before one) as a formula, so a caption such as `=HYPERLINK("http://x", "y")` would
become a live link or command on a reader's machine. Every text cell a download writes goes through
`spreadsheet_cell`, which puts a single quote before such a text; numbers are written as numbers (a
negative score stays a number).
"""

from __future__ import annotations

import csv
import numbers
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_cell(value: Any) -> Any:
    """`value` safe for a CSV cell: a text that a spreadsheet would read as a formula gets a leading
    `'`; numbers (int, float, Decimal, NumPy's) and None (an empty cell) pass unchanged; anything
    else as its text."""
    if value is None or isinstance(value, numbers.Number):
        return value
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def spreadsheet_row(values: Iterable[Any]) -> list[Any]:
    return [spreadsheet_cell(value) for value in values]


class SafeWriter:
    """A `csv.writer` whose every row goes through `spreadsheet_cell` (the same interface)."""

    def __init__(self, stream, **options):
        self._writer = csv.writer(stream, **options)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow(spreadsheet_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)
