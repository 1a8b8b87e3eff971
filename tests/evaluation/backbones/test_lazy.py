"""evaluation/capbench_eval/backbones/lazy.py: one build per instance, whichever threads ask."""

from __future__ import annotations

import threading
import time

import pytest

from capbench_eval.backbones.lazy import LazyModel
from capbench_eval.metrics.base import MetricUnavailable


class Counted(LazyModel):
    def __init__(self, missing: str | None = None):
        super().__init__()
        self.built, self.missing = 0, missing

    def unavailable_reason(self) -> str | None:
        return self.missing

    def build(self):
        self.require_available()
        time.sleep(0.01)
        self.built += 1
        return ("model", self.built)


def test_many_threads_build_once_and_share_the_result():
    model = Counted()
    results = []
    threads = [threading.Thread(target=lambda: results.append(model._load())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.built == 1
    assert results == [("model", 1)] * 8
    with model._lock:  # free again once loaded, for callers guarding a stateful model
        pass


def test_a_missing_model_says_why_and_is_tried_again_later():
    model = Counted(missing="weights are not in the store")
    with pytest.raises(MetricUnavailable, match="weights are not in the store"):
        model._load()
    model.missing = None
    assert model._load() == ("model", 1)


def test_the_exception_is_one_class_wherever_it_is_imported_from():
    from capbench_eval import errors, metrics

    assert MetricUnavailable is errors.MetricUnavailable is metrics.MetricUnavailable
