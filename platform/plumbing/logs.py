"""Log records that say which job and batch they are about, as text or as one JSON object a line.

`CAPBENCH_LOG_FORMAT=json` (the compose deployment's choice) writes each record as a JSON object:
time, level, logger, message, the exception if any, and the context fields bound where the work
happens (`job_id`, `batch_id`, `task_id`, `worker`, `metric`, `submission_id`), so a log store can
select everything about one batch across machines. The text format appends the same fields as
`key=value`. Fields passed with `extra={...}` under those names are written too.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

FIELDS = ("job_id", "batch_id", "task_id", "worker", "metric", "submission_id", "dataset_id")
_context: contextvars.ContextVar[dict[str, object] | None] = contextvars.ContextVar(
    "capbench_log_context", default=None
)


@contextlib.contextmanager
def log_context(**fields: object) -> Iterator[None]:
    """Every record logged inside carries these fields (nested contexts add to the outer one)."""
    token = _context.set({**(_context.get() or {}), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def bind(**fields: object) -> None:
    """Add fields to the current context (from where they become known, e.g. a batch's job)."""
    current = _context.get()
    if current is not None:
        current.update(fields)


def _fields(record: logging.LogRecord) -> dict[str, object]:
    fields = dict(_context.get() or {})
    for name in FIELDS:
        value = record.__dict__.get(name)
        if value is not None:
            fields[name] = value
    return {name: fields[name] for name in FIELDS if fields.get(name) is not None}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = _fields(record)
        if not fields:
            return text
        first, newline, rest = text.partition("\n")
        return f"{first} [{' '.join(f'{key}={value}' for key, value in fields.items())}]{newline}{rest}"
