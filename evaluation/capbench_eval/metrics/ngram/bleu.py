"""BLEU-1..4 as pycocoevalcap computes them (metrics.md §1): clipped n-gram counts, the closest
reference length (ties to the shorter), tiny = 1e-15 / small = 1e-9 and no other smoothing per
caption; the corpus number from summed statistics."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from capbench_eval.metrics.base import CORPUS, CaptionRow, Metric, MetricResult
from capbench_eval.metrics.ngram.corpus import MEMO_BATCHES, TokenizedCorpus, shared_corpus
from capbench_eval.metrics.ngram.tokenizer import warm as tokenizer_warm
from capbench_eval.metrics.registry import register

MAX_N = 4
TINY, SMALL = 1e-15, 1e-9
# Per row BLEU-1..4, the corpus BLEU-1..4 and per row the statistics `flat_stats` lists.
FamilyScores = tuple[list[list[float]], list[float], list[list[int]]]


@dataclass
class BleuStats:
    testlen: int
    reflen: int
    correct: list[int]
    guess: list[int]


def ngram_counts(words: list[str], n: int = MAX_N) -> Counter:
    return Counter(tuple(words[i : i + k]) for k in range(1, n + 1) for i in range(len(words) - k + 1))


def reference_maxima(references: Sequence[str]) -> tuple[Counter, list[int]]:
    """Per n-gram the largest count in any one reference (what a candidate count is clipped to),
    and the reference lengths."""
    clip: Counter = Counter()
    lengths = []
    for reference in references:
        ref_words = reference.split()
        lengths.append(len(ref_words))
        clip |= ngram_counts(ref_words)  # | keeps the maximum count per n-gram
    return clip, lengths


def bleu_stats(candidate: str, references: Sequence[str], maxima: tuple[Counter, list[int]] | None = None) -> BleuStats:
    words = candidate.split()
    counts = ngram_counts(words)
    clip, lengths = maxima or reference_maxima(references)
    correct = [0] * MAX_N
    for gram, count in counts.items():
        correct[len(gram) - 1] += min(count, clip[gram])
    reflen = min((abs(length - len(words)), length) for length in lengths)[1]
    return BleuStats(len(words), reflen, correct, [max(0, len(words) - k + 1) for k in range(1, MAX_N + 1)])


def bleu_scores(stats: BleuStats) -> list[float]:
    """BLEU-1..4 for one set of (possibly summed) statistics."""
    scores, product = [], 1.0
    for k in range(MAX_N):
        product *= (stats.correct[k] + TINY) / (stats.guess[k] + SMALL)
        scores.append(product ** (1.0 / (k + 1)))
    ratio = (stats.testlen + TINY) / (stats.reflen + SMALL)
    if ratio < 1:
        scores = [score * math.exp(1 - 1 / ratio) for score in scores]
    return scores


def flat_stats(stats: BleuStats) -> list[int]:
    """[testlen, reflen, correct 1..4, guess 1..4]: JSON-friendly, summable field by field."""
    return [stats.testlen, stats.reflen, *stats.correct, *stats.guess]


class BleuFamily:
    """All four orders come from the same statistics: computed once per batch."""

    def __init__(self) -> None:
        # The corpus objects themselves, not their id(): a freed corpus's id can be reused by the
        # next one. As many as the shared corpus memo keeps, newest last.
        self._kept: list[tuple[TokenizedCorpus, FamilyScores]] = []

    def scores(self, rows: Sequence[CaptionRow]) -> FamilyScores:
        """Per row BLEU-1..4, the corpus BLEU-1..4 and per row the statistics `flat_stats` lists."""
        corpus = shared_corpus.get(rows)
        for index, (kept, family) in enumerate(self._kept):
            if kept is corpus:
                self._kept.append(self._kept.pop(index))
                return family
        maxima: dict[tuple[str, ...], tuple[Counter, list[int]]] = {}
        stats = [
            bleu_stats(c, r, maxima.get(r) or maxima.setdefault(r, reference_maxima(r)))
            for c, r in zip(corpus.candidates, corpus.references, strict=True)
        ]
        per_distinct = [bleu_scores(s) for s in stats]
        total = BleuStats(0, 0, [0] * MAX_N, [0] * MAX_N)
        for s, times in zip(stats, corpus.multiplicity, strict=True):
            total.testlen += s.testlen * times
            total.reflen += s.reflen * times
            total.correct = [a + b * times for a, b in zip(total.correct, s.correct, strict=True)]
            total.guess = [a + b * times for a, b in zip(total.guess, s.guess, strict=True)]
        flat = [flat_stats(s) for s in stats]
        family = (corpus.expand(per_distinct), bleu_scores(total), corpus.expand(flat))
        self._kept.append((corpus, family))
        del self._kept[:-MEMO_BATCHES]
        return family


_family = BleuFamily()


class Bleu(Metric):
    """BLEU-n: one subclass per order (below), so that slug and name are class attributes as on every metric."""

    order: ClassVar[int]
    family = "ngram"
    aggregation = CORPUS
    citation = "K. Papineni, S. Roukos, T. Ward and W.-J. Zhu (2002). BLEU. ACL."
    description = "n-gram precision with a brevity penalty (pycocoevalcap, per caption without smoothing)."

    def config(self) -> dict:
        return {"order": self.order, "tokenizer": "ptb-corenlp-3.4.1", "reflen": "closest"}

    def warm(self) -> None:
        tokenizer_warm()

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        per_row, corpus, statistics = _family.scores(rows)
        return MetricResult(
            scores=[s[self.order - 1] for s in per_row], corpus=corpus[self.order - 1], statistics=statistics
        )

    def caption_totals(self, scores: np.ndarray, statistics: Sequence | None) -> np.ndarray:
        """Each caption's counts as `flat_stats` lists them: corpus BLEU sums them."""
        if statistics is None or any(row is None for row in statistics):
            raise ValueError("corpus BLEU needs the per-row statistics")
        return np.asarray(statistics, dtype=float).reshape(len(statistics), 2 + 2 * MAX_N)

    def from_totals(self, totals: np.ndarray) -> np.ndarray:
        """Corpus BLEU-n of summed counts, as pycocoevalcap reports it (bleu_scores, row by row)."""
        return corpus_bleu(np.atleast_2d(np.asarray(totals, dtype=float)), self.order)


def corpus_bleu(totals: np.ndarray, order: int) -> np.ndarray:
    """BLEU-`order` of each row of (n × 10) summed `flat_stats`: bleu_scores' arithmetic in the same
    order of operations, its powers and exponentials Python's own (numpy's differ in the last bit),
    so that a corpus number is pycocoevalcap's to the bit."""
    product = np.ones(len(totals))
    for k in range(order):
        product = product * ((totals[:, 2 + k] + TINY) / (totals[:, 2 + MAX_N + k] + SMALL))
    ratio = (totals[:, 0] + TINY) / (totals[:, 1] + SMALL)
    return np.array(
        [
            value ** (1.0 / order) * (math.exp(1 - 1 / short) if short < 1 else 1.0)
            for value, short in zip(product.tolist(), ratio.tolist(), strict=True)
        ]
    )


@register("bleu_1")
class Bleu1(Bleu):
    order, slug, name = 1, "bleu_1", "BLEU-1"


@register("bleu_2")
class Bleu2(Bleu):
    order, slug, name = 2, "bleu_2", "BLEU-2"


@register("bleu_3")
class Bleu3(Bleu):
    order, slug, name = 3, "bleu_3", "BLEU-3"


@register("bleu_4")
class Bleu4(Bleu):
    order, slug, name = 4, "bleu_4", "BLEU-4"
