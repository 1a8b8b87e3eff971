"""A model loaded once per instance, on first use, by whichever thread asks first, and kept until
the process's GPU budget needs its memory (evaluation/backbones/residency.py)."""

from __future__ import annotations

import threading

from evaluation.backbones import residency


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
                before = residency.allocated()
                with residency.building() as build:
                    self._loaded = self.build()
                residency.RESIDENCY.admit(self, residency.allocated() - before - build.nested)
            loaded = self._loaded
        residency.RESIDENCY.touch(self)
        return loaded

    def loaded(self) -> bool:
        return self._loaded is not None

    def unload(self) -> bool:
        """Drop the loaded model (built again on next use). False, and nothing dropped, while
        another thread holds the model's lock (it is loading or using it)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._loaded = None
        finally:
            self._lock.release()
        return True
