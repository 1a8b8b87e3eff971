"""CIDEr-D as pycocoevalcap computes it (metrics.md §4): TF-IDF n-gram vectors (n = 1..4) whose
document frequencies come from the batch's reference sets (one document per row), clipped cosine
against each reference with a Gaussian length penalty (sigma = 6), averaged, times 10.

The batch is the corpus: the same caption scores differently in another batch."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult
from capbench_eval.metrics.ngram.bleu import ngram_counts
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.tokenizer import warm as tokenizer_warm
from capbench_eval.metrics.registry import register

MAX_N, SIGMA = 4, 6.0
VECTOR_CACHE_SIZE = 200_000
Vector = tuple[list[dict[tuple, float]], list[float], int]


class CiderContext:
    """Document frequencies of one batch; reference vectors are computed once per text."""

    def __init__(self, reference_sets: Sequence[Sequence[str]], multiplicity: Sequence[int]):
        self.frequency: Counter = Counter()
        for references, times in zip(reference_sets, multiplicity, strict=True):
            for gram in {gram for ref in references for gram in ngram_counts(ref.split())}:
                self.frequency[gram] += times
        self.log_documents = math.log(float(sum(multiplicity)))
        self._vectors: dict[str, Vector] = {}

    def __getstate__(self) -> dict:
        return {"frequency": self.frequency, "log_documents": self.log_documents, "_vectors": {}}

    def vector(self, text: str) -> Vector:
        cached = self._vectors.get(text)
        if cached is None:
            if len(self._vectors) >= VECTOR_CACHE_SIZE:  # a long-lived worker context must not grow forever
                self._vectors.clear()
            cached = self._vectors[text] = self._vector(text)
        return cached

    def _vector(self, text: str) -> Vector:
        weights: list[dict[tuple, float]] = [{} for _ in range(MAX_N)]
        norms = [0.0] * MAX_N
        for gram, count in ngram_counts(text.split()).items():
            n = len(gram) - 1
            value = float(count) * (self.log_documents - math.log(max(1.0, self.frequency[gram])))
            weights[n][gram] = value
            norms[n] += value * value
        length = max(0, len(text.split()) - 1)  # the reference counts bigrams as "length"
        return weights, [math.sqrt(norm) for norm in norms], length

    def score(self, candidate: str, references: Sequence[str]) -> float:
        cand_weights, cand_norms, cand_length = self.vector(candidate)
        total = np.zeros(MAX_N)
        for reference in references:
            ref_weights, ref_norms, ref_length = self.vector(reference)
            penalty = math.exp(-((cand_length - ref_length) ** 2) / (2 * SIGMA**2))
            for n in range(MAX_N):
                value = 0.0
                for gram, weight in cand_weights[n].items():
                    ref_weight = ref_weights[n].get(gram, 0.0)
                    value += min(weight, ref_weight) * ref_weight
                if cand_norms[n] != 0 and ref_norms[n] != 0:
                    value /= cand_norms[n] * ref_norms[n]
                total[n] += value * penalty
        return float(np.mean(total) / len(references) * 10.0)


@register("cider_d")
class CiderD(Metric):
    slug = "cider_d"
    name = "CIDEr-D"
    family = "ngram"
    corpus_dependent = True
    # 2: the same formula; the platform's corpus rule changed (a caption enters a corpus once, or once
    # per row of its dataset's protocol, never once per rating dimension: docs/metaeval.md §7.7), and
    # a new version is what makes every stored CIDEr-D score computed again.
    version = "2"
    citation = "R. Vedantam, C. L. Zitnick and D. Parikh (2015). CIDEr. CVPR."
    description = "Consensus TF-IDF n-gram similarity with a length penalty; document frequencies from the batch."

    def config(self) -> dict:
        return {"n": MAX_N, "sigma": SIGMA, "tokenizer": "ptb-corenlp-3.4.1"}

    def warm(self) -> None:
        tokenizer_warm()

    def corpus_context(self, rows: Sequence[CaptionRow]) -> CiderContext:
        corpus = shared_corpus.get(rows)
        return CiderContext(corpus.references, corpus.multiplicity)

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        corpus = shared_corpus.get(rows)
        if context is None:
            context = CiderContext(corpus.references, corpus.multiplicity)
        elif not isinstance(context, CiderContext):
            raise TypeError(f"CIDEr-D expects a CiderContext, got {type(context).__name__}")
        distinct = [context.score(c, r) for c, r in zip(corpus.candidates, corpus.references, strict=True)]
        scores = corpus.expand(distinct)
        return MetricResult(scores=scores, corpus=float(np.mean(scores)) if scores else None)
