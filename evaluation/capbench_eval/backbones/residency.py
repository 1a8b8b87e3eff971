"""Which models a worker process keeps on its GPU: every model stays loaded across batches and jobs
until the GPU memory they take together passes the budget; then the least recently used ones are
unloaded (and built again from the store when next asked for).

A model's footprint is the GPU memory its `build()` allocated. The budget is
`CAPBENCH_GPU_MODEL_MEMORY` GiB, by default 80 % of the device (the rest is for activations). On a
CPU nothing is tracked and nothing is unloaded."""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from capbench_eval import config

GIB = 2**30
DEFAULT_SHARE = 0.8


def allocated() -> int:
    """Bytes of GPU memory torch holds in tensors now (0 without CUDA, or before torch is imported)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return 0
    return int(torch.cuda.memory_allocated())


def budget() -> int | None:
    """Bytes the kept models may take together; None without CUDA."""
    configured = config.env.gpu_model_memory
    if configured is not None:
        return int(configured * GIB)
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    return int(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory * DEFAULT_SHARE)


def release_cached() -> None:
    """Hand the memory of unloaded models back (Python's references first, then torch's cache)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass
class Build:
    """While this model was being built: bytes admitted for models built inside it (Polos builds
    its CLIP), and bytes of models their admission unloaded."""

    nested: int = 0
    freed: int = 0


_building = threading.local()


@contextlib.contextmanager
def building() -> Iterator[Build]:
    """Around a model's build: the footprints of models built inside it are counted apart, so that
    the outer model's own footprint leaves them out."""
    stack = _building.__dict__.setdefault("stack", [])
    stack.append(Build())
    try:
        yield stack[-1]
    finally:
        stack.pop()


def _count_nested(footprint: int = 0, freed: int = 0) -> None:
    stack = _building.__dict__.get("stack")
    if stack:
        stack[-1].nested += footprint
        stack[-1].freed += freed


class Unloadable(Protocol):
    """What the residency needs of a kept model (evaluation/capbench_eval/backbones/lazy.py's LazyModel): a way to
    drop it, which answers False while it is in use."""

    def unload(self) -> bool: ...


class Residency:
    """The loaded models of this process in order of last use, with their footprints."""

    def __init__(self) -> None:
        self._models: OrderedDict[int, tuple[weakref.ref[Unloadable], int]] = OrderedDict()
        self._lock = threading.Lock()
        self.unloaded = 0  # models unloaded so far, for the bench and the tests

    def admit(self, model: Unloadable, footprint: int) -> list[Unloadable]:
        """Record a model just built; unload the least recently used others while over budget.
        Returns those unloaded. A model in use (its lock held) is skipped."""
        if footprint <= 0:
            return []
        _count_nested(footprint)
        limit = budget()
        victims: list[Unloadable] = []
        freed = 0
        with self._lock:
            self._models[id(model)] = (weakref.ref(model), footprint)
            self._models.move_to_end(id(model))
            self._forget_dead()
            total = sum(size for _, size in self._models.values())
            for key, (ref, size) in list(self._models.items()):
                if limit is None or total <= limit:
                    break
                other = ref()
                if other is None or other is model or not other.unload():
                    continue
                del self._models[key]
                total -= size
                freed += size
                victims.append(other)
        if victims:
            self.unloaded += len(victims)
            release_cached()
            _count_nested(freed=freed)
        return victims

    def touch(self, model: Unloadable) -> None:
        """Mark a model as just used."""
        with self._lock:
            if id(model) in self._models:
                self._models.move_to_end(id(model))

    def footprints(self) -> list[tuple[Unloadable, int]]:
        """The kept models, least recently used first, with their bytes."""
        with self._lock:
            self._forget_dead()
            return [(model, size) for ref, size in self._models.values() if (model := ref()) is not None]

    def _forget_dead(self) -> None:
        for key in [key for key, (ref, _) in self._models.items() if ref() is None]:
            del self._models[key]


RESIDENCY = Residency()
