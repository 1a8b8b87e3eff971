"""Metrics by slug. `@register` on a class makes `get(slug)` return an instance of it."""

from __future__ import annotations

from collections.abc import Callable

from capbench_eval.metrics.base import Metric


class UnknownMetric(KeyError):
    """No metric is registered under a slug asked for. A KeyError, so callers catching that keep
    working; catch this one, so a KeyError from a bug inside a metric is not taken for a bad slug."""


_FACTORIES: dict[str, Callable[[], Metric]] = {}
_INSTANCES: dict[str, Metric] = {}


def register(slug: str, factory: Callable[[], Metric] | None = None):
    """`@register("rouge_l")` on a Metric class, or `register("bertscore_rescaled", lambda: BertScore(rescale=True))`
    for an instance built with arguments."""

    def add(target: Callable[[], Metric]) -> Callable[[], Metric]:
        if slug in _FACTORIES:
            raise ValueError(f"metric {slug!r} is registered twice")
        _FACTORIES[slug] = target
        return target

    return add(factory) if factory is not None else add


def get(slug: str) -> Metric:
    """One instance per process (models load once per worker)."""
    if slug not in _FACTORIES:
        raise UnknownMetric(f"unknown metric {slug!r} (known: {', '.join(sorted(_FACTORIES))})")
    if slug not in _INSTANCES:
        _INSTANCES[slug] = _FACTORIES[slug]()
    return _INSTANCES[slug]


def slugs() -> list[str]:
    return sorted(_FACTORIES)
