"""Looking up a cell by key in templates, and formatting metric values."""

from __future__ import annotations

from django import template

from leaderboards.rendering import metric_value as formatted

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
