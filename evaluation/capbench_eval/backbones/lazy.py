"""A model loaded once per instance, on first use, by whichever thread asks first, and kept until
the process's GPU budget needs its memory (evaluation/capbench_eval/backbones/residency.py)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from capbench_eval.backbones import residency
from capbench_eval.errors import MetricUnavailable

P = ParamSpec("P")
T = TypeVar("T")


def in_use(method: Callable[P, T]) -> Callable[P, T]:
    """On a LazyModel's method that works with the loaded model: while it runs, the model is in use
    and the GPU budget never unloads it (its memory would not be freed, and the next use would
    build a second copy)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        model = args[0]
        assert isinstance(model, LazyModel)
        with model._users_lock:
            model._users += 1
        try:
            return method(*args, **kwargs)
        finally:
            with model._users_lock:
                model._users -= 1

    return wrapper


class LazyModel:
    """Subclasses write `build()` (returns the loaded thing); `_load()` calls it once under the
    instance's lock and hands back its result ever after. The lock is free again afterwards, so
    subclasses also hold it around calls into a model that keeps per-call state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = None
        self._users = 0  # calls of `in_use` methods running now
        self._users_lock = threading.Lock()

    def build(self):
        raise NotImplementedError

    def unavailable_reason(self) -> str | None:
        return None

    def require_available(self) -> None:
        """MetricUnavailable with the reason when something the model needs is missing."""
        reason = self.unavailable_reason()
        if reason:
            raise MetricUnavailable(reason)

    def _load(self):
        with self._lock:
            if self._loaded is None:
                before = residency.allocated()
                with residency.building() as build:
                    self._loaded = self.build()
                # Its own memory: not that of models built inside it, and counting what their
                # admission unloaded meanwhile (it left `allocated()` lower).
                footprint = residency.allocated() - before - build.nested + build.freed
                residency.RESIDENCY.admit(self, footprint)
            loaded = self._loaded
        residency.RESIDENCY.touch(self)
        return loaded

    def loaded(self) -> bool:
        return self._loaded is not None

    def unload(self) -> bool:
        """Drop the loaded model (built again on next use). False, and nothing dropped, while it is
        in use (an `in_use` method runs) or another thread holds its lock (loading it)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            with self._users_lock:
                if self._users:
                    return False
                self._loaded = None
        finally:
            self._lock.release()
        return True
