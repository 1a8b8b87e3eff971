"""Reading source files strictly: UTF-8, field counts and value ranges, with file/line/field errors."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

from catalog.importers.errors import ImportFormatError

_MD5 = re.compile(r"^[0-9a-fA-F]{32}$")
# PostgreSQL text and jsonb cannot hold a NUL character: refused where it is read, with its line.
NUL_REFUSED = "contains a NUL character (U+0000), which no stored text may hold"


def source_file(path: Path, default_name: str) -> Path:
    """`path` itself if it is a file, else `default_name` inside the directory `path`."""
    candidate = path / default_name if path.is_dir() else path
    if not candidate.is_file():
        raise ImportFormatError(candidate, None, None, "file not found")
    return candidate


@overload
def sibling_file(main_file: Path, name: str, *, required: Literal[True]) -> Path: ...
@overload
def sibling_file(main_file: Path, name: str, *, required: bool) -> Path | None: ...
def sibling_file(main_file: Path, name: str, *, required: bool) -> Path | None:
    """A companion file that lives beside the main one (references, tokens, checksums)."""
    candidate = main_file.parent / name
    if candidate.is_file():
        return candidate
    if required:
        raise ImportFormatError(candidate, None, None, f"file not found (expected beside {main_file.name})")
    return None


def text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text without the line break) for every line, decoding UTF-8 strictly."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ImportFormatError(path, number, None, f"not valid UTF-8 (byte {error.start})") from None
            if "\x00" in text:
                raise ImportFormatError(path, number, None, NUL_REFUSED)
            yield number, text.rstrip("\r\n")


def tsv_rows(path: Path, fields: list[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """Tab-separated rows with exactly len(fields) columns; blank lines are skipped."""
    for number, text in text_lines(path):
        if not text.strip():
            continue
        values = text.split("\t")
        if len(values) != len(fields):
            raise ImportFormatError(
                path,
                number,
                None,
                f"expected {len(fields)} tab-separated fields ({', '.join(fields)}), found {len(values)}",
            )
        yield number, dict(zip(fields, values, strict=True))


def parse_int(
    raw: Any, *, path: Path, line: int | None, field: str, low: int | None = None, high: int | None = None
) -> int:
    if isinstance(raw, bool):
        raise ImportFormatError(path, line, field, f"expected an integer, found {raw!r}")
    try:
        value = int(raw) if not isinstance(raw, float) or raw.is_integer() else None
    except (TypeError, ValueError):
        value = None
    if value is None:
        raise ImportFormatError(path, line, field, f"expected an integer, found {raw!r}")
    _check_range(value, path=path, line=line, field=field, low=low, high=high)
    return value


def parse_float(
    raw: Any, *, path: Path, line: int | None, field: str, low: float | None = None, high: float | None = None
) -> float:
    if isinstance(raw, bool):
        raise ImportFormatError(path, line, field, f"expected a number, found {raw!r}")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ImportFormatError(path, line, field, f"expected a number, found {raw!r}") from None
    if not math.isfinite(value):
        raise ImportFormatError(path, line, field, f"expected a finite number, found {raw!r}")
    _check_range(value, path=path, line=line, field=field, low=low, high=high)
    return value


def _check_range(
    value: float, *, path: Path, line: int | None, field: str, low: float | None, high: float | None
) -> None:
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"between {low} and {high}"
            if low is not None and high is not None
            else (f">= {low}" if low is not None else f"<= {high}")
        )
        raise ImportFormatError(path, line, field, f"value {value!r} out of range (must be {bounds})")


def parse_text(raw: Any, *, path: Path, line: int | None, field: str) -> str:
    if not isinstance(raw, str):
        raise ImportFormatError(path, line, field, f"expected a string, found {type(raw).__name__}")
    if not raw.strip():
        raise ImportFormatError(path, line, field, "empty text")
    return raw


def parse_text_list(raw: Any, *, path: Path, line: int | None, field: str, allow_empty: bool = False) -> list[str]:
    if not isinstance(raw, list):
        raise ImportFormatError(path, line, field, f"expected a list of strings, found {type(raw).__name__}")
    if not raw and not allow_empty:
        raise ImportFormatError(path, line, field, "empty list")
    return [parse_text(value, path=path, line=line, field=f"{field}[{index}]") for index, value in enumerate(raw)]


def _holds_nul(value: Any) -> bool:
    """Whether a parsed JSON value has a NUL character (written \\u0000) in any string or key."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_holds_nul(key) or _holds_nul(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_holds_nul(item) for item in value)
    return False


def json_document(path: Path) -> Any:
    """A whole-file JSON document; syntax errors name the line."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        line = path.read_bytes()[: error.start].count(b"\n") + 1
        raise ImportFormatError(path, line, None, f"not valid UTF-8 (byte {error.start})") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ImportFormatError(path, error.lineno, None, f"invalid JSON: {error.msg}") from None
    if _holds_nul(document):
        raise ImportFormatError(path, text[: max(text.find("\\u0000"), 0)].count("\n") + 1, None, NUL_REFUSED)
    return document


def json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, parsed object) for each non-blank line of a JSON Lines file."""
    for number, text in text_lines(path):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as error:
            raise ImportFormatError(path, number, None, f"invalid JSON: {error.msg}") from None
        if _holds_nul(row):
            raise ImportFormatError(path, number, None, NUL_REFUSED)
        yield number, row


def require_object(raw: Any, *, path: Path, line: int | None, field: str | None = None) -> dict:
    if not isinstance(raw, dict):
        raise ImportFormatError(path, line, field, f"expected a JSON object, found {type(raw).__name__}")
    return raw


def require_keys(row: dict, keys: list[str], *, path: Path, line: int | None) -> None:
    for key in keys:
        if key not in row:
            raise ImportFormatError(path, line, key, "missing")


def md5_manifest(path: Path) -> dict[str, tuple[str, str]]:
    """`md5  relative/path` lines → {file name: (md5, path as written)}."""
    entries: dict[str, tuple[str, str]] = {}
    for number, text in text_lines(path):
        if not text.strip():
            continue
        parts = text.split(maxsplit=1)
        if len(parts) != 2:
            raise ImportFormatError(path, number, None, "expected '<md5>  <path>'")
        checksum, listed = parts[0], parts[1].lstrip("*").strip()
        if not _MD5.match(checksum):
            raise ImportFormatError(path, number, "md5", f"not an md5 checksum: {checksum!r}")
        name = Path(listed).name
        if name in entries and entries[name][0] != checksum.lower():
            raise ImportFormatError(path, number, "path", f"file name {name!r} listed twice")
        entries[name] = (checksum.lower(), listed)
    return entries
