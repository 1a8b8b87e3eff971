"""Looking up a cell by key in templates, and formatting metric values."""

from __future__ import annotations

from django import template

from leaderboards.rendering import STATE_WORDS
from leaderboards.rendering import metric_value as formatted
from leaderboards.rendering import points as shown_points

register = template.Library()


@register.filter
def cell(cells: dict, key):
    return cells.get(key)


@register.filter
def metric_value(value: float | None) -> str:
    return formatted(value)


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


@register.filter
def points(value: float | None, scale: float = 100.0) -> str:
    """A board number as papers report it (rendering.points)."""
    return "—" if value is None else shown_points(value, scale)


@register.filter
def state_words(state: str) -> str:
    """Why a cell has no number, in plain words."""
    return STATE_WORDS.get(state, (state, state))[1]


@register.filter
def p_value(difference) -> str:
    """A bootstrap p-value (capbench_eval.metaeval.paired.PairedDifference): below what its replicates
    can tell apart (2 / replicates, two-sided) written as "< that"."""
    value = getattr(difference, "p_value", None)
    if value is None or value != value:
        return "—"
    floor = 2 / max(difference.replicates, 1)
    return f"< {floor:.3g}" if value < floor else f"{value:.3f}"


@register.filter
def signed(value: float | None) -> str:
    """A gap in points with its sign (+1.2, −0.4)."""
    if value is None:
        return "—"
    return f"{value:+.1f}".replace("-", "−")
