"""Reading delimited text (CSV, `;`-separated AMT batch files) strictly: UTF-8, a header row, every
record the header's width, and errors naming the line a record starts on."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import NUL_REFUSED


@dataclass(frozen=True)
class Record:
    line: int  # the line the record starts on (1 = the header)
    number: int  # its position among the data records, from 1
    values: dict[str, str]


def header_and_records(path: Path, *, delimiter: str = ",") -> tuple[list[str], Iterator[Record]]:
    """The header's column names and an iterator over the data records (quoted fields may span
    lines). A byte-order mark is dropped; blank lines are skipped."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise ImportFormatError(path, line, None, f"not valid UTF-8 (byte {error.start})") from None
    if "\x00" in text:
        raise ImportFormatError(path, text[: text.index("\x00")].count("\n") + 1, None, NUL_REFUSED)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader)
    except StopIteration:
        raise ImportFormatError(path, 1, None, "empty file (expected a header row)") from None
    except csv.Error as error:
        raise ImportFormatError(path, 1, None, f"unreadable header: {error}") from None
    duplicated = sorted({name for name in header if header.count(name) > 1 and name})
    if duplicated:
        raise ImportFormatError(path, 1, duplicated[0], "column named twice in the header")
    return header, _records(path, reader, header)


def _records(path: Path, reader, header: list[str]) -> Iterator[Record]:
    number = 0
    while True:
        start = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise ImportFormatError(path, start, None, f"malformed record: {error}") from None
        if not values or (len(values) == 1 and not values[0].strip()):
            continue
        if len(values) != len(header):
            raise ImportFormatError(
                path, start, None, f"expected {len(header)} fields (as in the header), found {len(values)}"
            )
        number += 1
        yield Record(line=start, number=number, values=dict(zip(header, values, strict=True)))


def require_columns(path: Path, header: list[str], columns: list[str]) -> None:
    for column in columns:
        if column not in header:
            shown = ", ".join(name or "''" for name in header[:12]) + (", ..." if len(header) > 12 else "")
            raise ImportFormatError(path, 1, column, f"missing column (the header has: {shown})")
