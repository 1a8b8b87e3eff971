"""A submission's scoring progress as one line: captions scored across its metrics, a bar, and how
many metrics are finished. On a terminal the line is redrawn in place; elsewhere (a log, CI) a new
line is written only when it changes."""

from __future__ import annotations

from typing import Any, TextIO

from capbench_client.terminal import shown

FINAL_JOB_STATES = ("done", "failed", "unavailable")
WIDTH = 30


def progress_line(state: dict[str, Any], width: int = WIDTH) -> str:
    """`[######------]  1,234/2,000 scored  1/2 metrics finished  (running)` from a progress answer.
    The metrics the server does not compute (its `unavailable` list; an older server's metrics
    whose status is "unavailable") are no work to wait for: they count in no total and are named
    apart, so a finished submission's bar ends at N/N."""
    listed = [m for m in state.get("metrics") or [] if isinstance(m, dict)]
    metrics = [m for m in listed if m.get("status") != "unavailable"]
    not_here = len([m for m in state.get("unavailable") or [] if isinstance(m, dict)]) + len(listed) - len(metrics)
    done = sum(int(m.get("done") or 0) for m in metrics)
    total = sum(int(m.get("total") or 0) for m in metrics)
    finished = sum(1 for m in metrics if m.get("status") in FINAL_JOB_STATES)
    failed = sum(1 for m in metrics if m.get("status") == "failed")
    share = done / total if total else (1.0 if state.get("final") else 0.0)
    filled = round(share * width)
    parts = [
        f"[{'#' * filled}{'-' * (width - filled)}]",
        f"{done:,}/{total:,} scored",
        f"{finished}/{len(metrics)} metrics finished",
    ]
    if failed:
        parts.append(f"{failed} failed")
    if not_here:
        parts.append(f"{not_here} not computed on this server")
    ahead = sum(int(m.get("batches_ahead") or 0) for m in metrics)
    if ahead and not state.get("final"):
        parts.append(f"{ahead:,} {'batch' if ahead == 1 else 'batches'} ahead in the queue")
    parts.append(f"({state.get('status', '?')})")
    return shown("  ".join(parts))


class ProgressDisplay:
    """Shows each progress answer on `stream` (stderr): redrawn with \\r on a terminal (`tty`), else
    printed when it differs from the last."""

    def __init__(self, stream: TextIO, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.last = ""
        self.drawn = 0

    def __call__(self, state: dict[str, Any]) -> None:
        line = progress_line(state)
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.stream.write("\r" + line.ljust(self.drawn))
            self.drawn = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Ends the redrawn line (a terminal only)."""
        if self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = 0
