"""What a metric that is not computed on this deployment says to visitors, in plain words made from
what it needs. `Metric.unavailable_reason` holds the server's own words (paths in the model store,
settings to set, commands to run): those are for staff only. Read by the results card, the boards'
cells and the metrics index, so that every page words it the same way."""

from __future__ import annotations

from collections.abc import Iterable

UNAVAILABLE = "not available on this server yet"


def unavailable_cause(needs: Iterable[str]) -> str:
    """What is missing for a metric that needs `needs` (Metric.needs), in a few words."""
    needed = set(needs)
    if "api" in needed:
        return "the language-model service it asks is not set up"
    if needed & {"gpu", "media"}:
        return "its model is not installed"
    return "a program it needs is not installed"


def unavailable_words(needs: Iterable[str] | None = None) -> str:
    """Why a metric has no number here, for anyone; `needs` (Metric.needs: references / media / gpu
    / api) makes it precise, None gives the general sentence (a cell that knows no metric)."""
    if needs is None:
        return f"{UNAVAILABLE} (a model or service it needs is not installed)"
    return f"{UNAVAILABLE}: {unavailable_cause(needs)}"


def not_computed_here(metrics: Iterable[tuple[str, Iterable[str]]]) -> str:
    """The one line a page gives the metrics this server does not compute, from (name, needs)
    pairs: "BERTScore, CLIP-S (its model is not installed); SPICE (a program it needs is not
    installed)"; names grouped by cause, in the order given; "" for none."""
    by_cause: dict[str, list[str]] = {}
    for name, needs in metrics:
        by_cause.setdefault(unavailable_cause(needs or ()), []).append(name)
    return "; ".join(f"{', '.join(names)} ({cause})" for cause, names in by_cause.items())
