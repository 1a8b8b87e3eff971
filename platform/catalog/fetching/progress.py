"""A download's progress on stderr: one redrawn line on a terminal (bytes, percent, rate), plain
lines now and then otherwise (a log file gets a line per 10 % or per 30 s, not per chunk)."""

from __future__ import annotations

import time
from typing import TextIO

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def human_size(size: float | None) -> str:
    if size is None:
        return "size unknown"
    value = float(size)
    for unit in UNITS:
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Progress:
    def __init__(self, stream: TextIO | None, label: str, total: int | None, start: int = 0) -> None:
        self.stream = stream
        self.label = label
        self.total = total
        self.done = start
        self.start = start
        self.started = self.last_drawn = time.monotonic()
        self.last_percent = -10.0
        self.terminal = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def advance(self, count: int) -> None:
        self.done += count
        if self.stream is None:
            return
        now = time.monotonic()
        if self.terminal:
            if now - self.last_drawn >= 0.1:
                self.last_drawn = now
                self.stream.write(f"\r{self._line(now)}\033[K")
                self.stream.flush()
            return
        percent = 100.0 * self.done / self.total if self.total else 0.0
        if percent - self.last_percent >= 10 or now - self.last_drawn >= 30:
            self.last_percent, self.last_drawn = percent, now
            self.stream.write(f"{self._line(now)}\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.stream is None or (not self.terminal and self.last_percent >= 100):
            return
        line = self._line(time.monotonic())
        self.stream.write(f"\r{line}\033[K\n" if self.terminal else f"{line}\n")
        self.stream.flush()

    def _line(self, now: float) -> str:
        rate = (self.done - self.start) / max(now - self.started, 1e-6)
        if self.total:
            amount = f"{human_size(self.done)} of {human_size(self.total)} ({100.0 * self.done / self.total:5.1f} %)"
        else:
            amount = human_size(self.done)
        return f"{self.label}: {amount}, {human_size(rate)}/s"
