"""What every metric is: a class with declared needs, direction and version that turns a corpus of
rows into per-row scores plus the corpus aggregate the reference reports."""

from __future__ import annotations

import functools
import hashlib
import json
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from capbench_eval.errors import MetricUnavailable  # defined there (the backbones raise it too), exported here

__all__ = ["CORPUS", "MEAN", "Availability", "CaptionRow", "Metric", "MetricResult", "MetricUnavailable"]

MEAN, CORPUS = "mean", "corpus"  # Metric.aggregation


@dataclass(frozen=True)
class CaptionRow:
    """One candidate to score. `references` may be empty for reference-free metrics; `media` is a
    path to the image or video when the metric needs one."""

    id: str
    candidate: str
    references: tuple[str, ...] = ()
    media: str | None = None


@dataclass
class MetricResult:
    scores: list[float]
    corpus: float | None
    details: list[dict] | None = None
    # Per-row sufficient statistics (JSON values) from which `Metric.aggregate` rebuilds the corpus
    # number of any subset of rows scored in separate batches (BLEU's clipped counts, Meteor's stats).
    statistics: list | None = None


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""


class Metric(ABC):
    slug: ClassVar[str]
    name: ClassVar[str]
    family: ClassVar[str]
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs: ClassVar[frozenset[str]] = frozenset({"references"})  # references / media / gpu / api
    citation: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # Choices we made where the paper or the reference code leaves one open (shown on the metric's page;
    # each one that moves numbers is also in `config()`, so changing it makes a new version).
    notes: ClassVar[tuple[str, ...]] = ()
    # Per-row scores depend on the whole batch (CIDEr-D's document frequencies).
    corpus_dependent: ClassVar[bool] = False
    # What a number is multiplied by where people read it (every page, chart axis and CSV: "points");
    # papers and the COCO server report 0–1 metrics ×100 (CIDEr-D 1.20 as 120.0); a judge rating
    # 0–100 sets 1. The API gives both the native value and its points (docs/api.md).
    points: ClassVar[float] = 100.0
    # How a system's number is formed from its captions' scores (docs/metrics.md, "A system's
    # number"): MEAN, the mean of its per-caption scores; CORPUS, the metric's corpus statistic over
    # its captions' summed per-caption statistics (corpus BLEU, Meteor's aggregate). Either way over
    # the system's own captions, as COCO's toolkit scores a results file; a subset board's over the
    # subset's. caption_totals and from_totals below say how (a corpus metric overrides both).
    aggregation: ClassVar[str] = MEAN
    # Seconds of work per 1,000 captions on its queue's device, roughly (docs/performance.md): a
    # submission's jobs are sent longest first, so that the slowest one does not start last and
    # leave the other worker processes idle while it finishes.
    cost: ClassVar[float] = 0.5
    # Captions per batch when not the queue's (CAPBENCH_BATCH_SIZE_*): a metric whose every worker
    # process must start and warm its own JVM does better in fewer, larger batches.
    batch_size: ClassVar[int | None] = None

    # The extra of the capbench-eval distribution that installs the Python packages this metric needs
    # beyond numpy and scipy ("clip", "bertscore", "judges", "vision"; docs/library.md), named when
    # one of them is missing.
    extra: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A subclass's own `unavailable_reason` also answers for a Python package it needs but
        cannot import (a laptop with `pip install capbench-eval` and no extra): a reason naming
        the package and the extra, never an ImportError."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("unavailable_reason")
        if own is not None:
            cls.unavailable_reason = _naming_missing_packages(own)  # type: ignore[method-assign,assignment]

    def config(self) -> dict:
        """Everything besides the code version that changes the numbers."""
        return {}

    def config_hash(self) -> str:
        text = json.dumps({"slug": self.slug, "version": self.version, **self.config()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def unavailable_reason(self) -> str | None:
        """Why the metric cannot score here and now (missing weights, Java, a key), or None."""
        return None

    def availability(self) -> Availability:
        reason = self.unavailable_reason()
        return Availability(reason is None, reason or "")

    def require_available(self) -> None:
        """MetricUnavailable with the reason, for `score` to call first."""
        reason = self.unavailable_reason()
        if reason:
            raise MetricUnavailable(reason)

    def warm(self) -> None:  # noqa: B027 (a hook: most metrics start nothing ahead)
        """Start now what the first `score` would start (a JVM, a model), so that a worker's first
        batch does not wait for it. A worker process calls it once at its start for the metrics of
        the queues it serves (scoring.warmup); it may take seconds, and raises as `score` would."""

    @property
    def queue(self) -> str:
        """Which worker pool runs it: GPU models, rate-limited remote APIs, or plain CPU."""
        return "gpu" if "gpu" in self.needs else "api" if "api" in self.needs else "cpu"

    def corpus_context(self, rows: Sequence[CaptionRow]) -> object | None:
        """What a corpus-dependent metric needs from the whole corpus (CIDEr-D's document
        frequencies), built once so that batches of it score exactly as the whole corpus would.
        Must depend only on the rows' references and multiplicity, and be picklable."""
        return None

    @abstractmethod
    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        """Score every row. Without `context`, `rows` is the corpus for corpus-dependent metrics;
        with it, `rows` may be any batch of the corpus the context was built from."""

    def caption_totals(self, scores: np.ndarray, statistics: Sequence | None) -> np.ndarray:
        """(captions × k): what a system's number sums over its captions (its sufficient
        statistics). A mean metric: each caption's score and 1 (the sum and the count); a corpus
        metric overrides it with its per-caption statistics. `scores` are finite; `statistics` are
        aligned with them (a corpus metric's; None for a mean metric)."""
        return mean_caption_totals(scores)

    def from_totals(self, totals: np.ndarray) -> np.ndarray:
        """The system numbers of (n × k) summed caption_totals, one per row: the mean, or a corpus
        metric's corpus statistic. Vectorised: a bootstrap's thousand replicates are one call."""
        return mean_from_totals(totals)

    def aggregate(self, scores: Sequence[float], statistics: Sequence | None = None) -> float | None:
        """The system number over rows scored in any number of batches (from_totals of their summed
        caption_totals): a mean metric's mean of the finite `scores` (NaN failures left out); a
        corpus metric's corpus statistic from the rows' `statistics` (ValueError without them)."""
        if self.aggregation == CORPUS:
            if statistics is None:
                raise ValueError(f"the corpus {self.name} needs the per-row statistics")
            if not len(statistics):
                return None
            totals = self.caption_totals(np.zeros(len(statistics)), statistics)
        else:
            kept = [value for value in scores if value is not None and not math.isnan(value)]
            if not kept:
                return None
            totals = self.caption_totals(np.asarray(kept, dtype=float), None)
        return float(self.from_totals(totals.sum(axis=0))[0])

    def resampled(self, scores: np.ndarray, statistics: list | None, weights: np.ndarray | None) -> float | np.ndarray:
        """The system number of finite `scores` (with their `statistics`), each row counted as often
        as a bootstrap replicate drew it: `weights` is (replicates × rows) and the answer one number
        per replicate; None: every row once, one number."""
        if not len(scores) and not statistics:
            raise ValueError("no score to aggregate")
        if self.aggregation == CORPUS and not statistics:
            raise ValueError(f"the corpus {self.name} needs the per-row statistics")
        totals = self.caption_totals(np.asarray(scores, dtype=float), statistics)
        if weights is None:
            return float(self.from_totals(totals.sum(axis=0))[0])
        return self.from_totals(np.asarray(weights, dtype=float) @ totals)


def mean_caption_totals(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """A mean's sums per caption: each score and 1 (Metric.caption_totals unless overridden)."""
    values = np.asarray(scores, dtype=float)
    return np.column_stack([values, np.ones(len(values))])


def mean_from_totals(totals: np.ndarray) -> np.ndarray:
    """Means of (n × 2) summed (score, 1) totals (Metric.from_totals unless overridden)."""
    totals = np.atleast_2d(np.asarray(totals, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return totals[:, 0] / totals[:, 1]


def _naming_missing_packages(reason: Callable[[Metric], str | None]) -> Callable[[Metric], str | None]:
    @functools.wraps(reason)
    def checked(self: Metric) -> str | None:
        try:
            return reason(self)
        except ModuleNotFoundError as error:
            extra = f"pip install 'capbench-eval[{self.extra}]' or " if self.extra else ""
            return f"{self.name} needs the Python package {error.name!r}, not installed here ({extra}install it)"

    return checked
