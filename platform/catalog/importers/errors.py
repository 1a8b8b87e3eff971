"""The one error every importer raises: it names the file, the line and the field."""

from __future__ import annotations

from pathlib import Path


class ImportFormatError(ValueError):
    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        where = self.path if line is None else f"{self.path}, line {line}"
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}")
