"""A number as people read it and as the API gives it (docs/api.md, "Numbers"): the metric's native
value (0–1 for most metrics) with its 95% interval on the same scale, and the same three in the
metric's display points (×`Metric.points`: 0–1 metrics ×100, as papers and the COCO server report
them). Every page, chart axis and CSV shows points; the API gives both side by side, never mixed in
one object: `value`, `low`, `high` native and `points`, `low_points`, `high_points` displayed."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Shown:
    """A number, its interval (None where it has none) and its display scale (`Metric.points`)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    scale: float = 1.0

    @property
    def points(self) -> float | None:
        return _scaled(self.value, self.scale)

    @property
    def low_points(self) -> float | None:
        return _scaled(self.low, self.scale)

    @property
    def high_points(self) -> float | None:
        return _scaled(self.high, self.scale)

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None

    def json(self) -> dict:
        """The API's shape of a number: native (as computed) and points side by side."""
        return {
            "value": _finite(self.value),
            "low": _finite(self.low),
            "high": _finite(self.high),
            "points": self.points,
            "low_points": self.low_points,
            "high_points": self.high_points,
        }


def _scaled(value: float | None, scale: float) -> float | None:
    """value × scale without the float noise of the product (0.0875 × 100 is 8.75, not
    8.750000000000002): 12 significant digits, so that a tiny value (a sentence BLEU-4 of 3.75e-05)
    keeps its own."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value * scale:.12g}")


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def points_text(value: float | None, scale: float) -> str:
    """A number in points as every page prints it: one decimal (two below 10 on a ×1 scale, where
    a 1–5 rating or a 0–100 judge's 7.25 would otherwise lose its second digit); "—" for none."""
    if value is None or not math.isfinite(value):
        return "—"
    shown = value * scale
    return f"{shown:.2f}" if scale == 1 and abs(shown) < 10 else f"{shown:.1f}"
