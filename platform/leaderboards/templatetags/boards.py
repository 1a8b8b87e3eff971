"""Looking up a cell by key in templates, and formatting metric values."""
from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def cell(cells: dict, key):
    return cells.get(key)


@register.filter
def metric_value(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"
