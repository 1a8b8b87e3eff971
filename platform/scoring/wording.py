"""What a metric that is not computed on this deployment says to visitors, in plain words made from
what it needs. `Metric.unavailable_reason` holds the server's own words (paths in the model store,
settings to set, commands to run): those are for staff only. Read by the results card, the boards'
cells and the metrics index, so that every page words it the same way."""

from __future__ import annotations

from collections.abc import Iterable

UNAVAILABLE = "not available on this server yet"


def unavailable_words(needs: Iterable[str] | None = None) -> str:
    """Why a metric has no number here, for anyone; `needs` (Metric.needs: references / media / gpu
    / api) makes it precise, None gives the general sentence (a cell that knows no metric)."""
    if needs is None:
        return f"{UNAVAILABLE} (a model or service it needs is not installed)"
    needed = set(needs)
    if "api" in needed:
        return f"{UNAVAILABLE}: the language-model service it asks is not set up"
    if needed & {"gpu", "media"}:
        return f"{UNAVAILABLE}: its model is not installed"
    return f"{UNAVAILABLE}: a program it needs is not installed"
