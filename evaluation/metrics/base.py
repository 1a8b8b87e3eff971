"""What every metric is: a class with declared needs, direction and version that turns a corpus of
rows into per-row scores plus the corpus aggregate the reference reports."""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar


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


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""


class MetricUnavailable(RuntimeError):
    """Raised by `score` when something the metric needs (weights, Java, CoreNLP, an API key) is
    missing. The message says what, so the platform can show it."""


class Metric(ABC):
    slug: ClassVar[str]
    name: ClassVar[str]
    family: ClassVar[str]
    version: ClassVar[str] = "1"
    higher_is_better: ClassVar[bool] = True
    needs: ClassVar[frozenset[str]] = frozenset({"references"})  # references / media / gpu / api
    citation: ClassVar[str] = ""
    description: ClassVar[str] = ""
    # Per-row scores depend on the whole batch (CIDEr-D's document frequencies).
    corpus_dependent: ClassVar[bool] = False

    def config(self) -> dict:
        """Everything besides the code version that changes the numbers."""
        return {}

    def config_hash(self) -> str:
        text = json.dumps({"slug": self.slug, "version": self.version, **self.config()}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def availability(self) -> Availability:
        return Availability(True)

    @abstractmethod
    def score(self, rows: Sequence[CaptionRow]) -> MetricResult:
        """Score every row; `rows` is the corpus for corpus-dependent metrics."""

