"""A model loaded once per instance, on first use, by whichever thread asks first."""

from __future__ import annotations

import threading


class LazyModel:
    """Subclasses write `build()` (returns the loaded thing); `_load()` calls it once under the
    instance's lock and hands back its result ever after. The lock is free again afterwards, so
    subclasses also hold it around calls into a model that keeps per-call state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = None

    def build(self):
        raise NotImplementedError

    def unavailable_reason(self) -> str | None:
        return None

    def require_available(self) -> None:
        """MetricUnavailable with the reason when something the model needs is missing."""
        reason = self.unavailable_reason()
        if reason:
            from evaluation.metrics.base import MetricUnavailable  # (the metrics package imports the backbones)

            raise MetricUnavailable(reason)

    def _load(self):
        with self._lock:
            if self._loaded is None:
                self._loaded = self.build()
        return self._loaded
