"""The one error every importer raises: it names the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

from plumbing.errors import ApplicationError


class ImportFormatError(ApplicationError, ValueError):
    """400; the API's body says it under "file" (the upload's field)."""

    detail_key = "file"

    def __init__(self, path: Path | str, line: int | None, field: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.message = message
        where = self.path if line is None else f"{self.path}, line {line}"
        what = f"field '{field}': " if field else ""
        super().__init__(f"{where}: {what}{message}")
