"""Metrics the scoring tests register through CAPBENCH_METRIC_PLUGINS (in a worker) or by import
(in the test process): slow enough to be killed mid-job, unavailable, or failing on some captions."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

from capbench_eval.metrics import Metric, MetricResult, register
from capbench_eval.metrics.base import Availability


@register("test_words")
class WordCount(Metric):
    """Words in the candidate, after a pause per batch (CAPBENCH_TEST_PAUSE seconds)."""

    slug, name, family = "test_words", "Test: word count", "test"
    needs = frozenset()

    def score(self, rows, context=None) -> MetricResult:
        time.sleep(float(os.environ.get("CAPBENCH_TEST_PAUSE", "0")))
        scores = [float(len(row.candidate.split())) for row in rows]
        return MetricResult(scores=scores, corpus=sum(scores) / len(scores) if scores else None)


@register("test_image_bytes")
class ImageBytes(Metric):
    """The size in bytes of the caption's picture, read from the path the worker was given, after a
    pause per batch (CAPBENCH_TEST_PAUSE seconds): what a worker reads is the picture itself."""

    slug, name, family = "test_image_bytes", "Test: picture bytes", "test"
    needs = frozenset({"media"})

    def score(self, rows, context=None) -> MetricResult:
        time.sleep(float(os.environ.get("CAPBENCH_TEST_PAUSE", "0")))
        scores = [float(len(Path(row.media).read_bytes())) for row in rows]
        return MetricResult(scores=scores, corpus=None)


@register("test_missing_weights")
class MissingWeights(Metric):
    slug, name, family = "test_missing_weights", "Test: weights absent", "test"

    def availability(self) -> Availability:
        return Availability(False, "checkpoint test-model.pt is not in the model store")

    def score(self, rows, context=None) -> MetricResult:
        raise AssertionError("an unavailable metric must never be asked to score")


@register("test_questions")
class FailsOnQuestions(Metric):
    """No number for candidates with '??' (a judge's unparseable answer, say, whose reply holds a NUL)."""

    slug, name, family = "test_questions", "Test: fails on ??", "test"

    def score(self, rows, context=None) -> MetricResult:
        scores = [math.nan if "??" in row.candidate else 1.0 for row in rows]
        details = [
            {"error": "could not read a number in the answer", "reply": "no number\x00 here"}
            if "??" in row.candidate
            else None
            for row in rows
        ]
        return MetricResult(scores=scores, corpus=None, details=details)


@register("test_broken")
class Broken(Metric):
    """Raises on every batch: the job must fail after its bounded retries, naming the error."""

    slug, name, family = "test_broken", "Test: always raises", "test"

    def score(self, rows, context=None) -> MetricResult:
        raise RuntimeError("the model exploded")
