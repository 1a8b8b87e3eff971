"""ROUGE-L as pycocoevalcap computes it (metrics.md §3): tokens by single-space split, LCS per
reference, precision and recall maximised separately over references, F with beta = 1.2."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.tokenizer import warm as tokenizer_warm
from capbench_eval.metrics.registry import register

BETA = 1.2


def lcs_length(a: list[str], b: list[str]) -> int:
    """Bit-parallel LCS (Allison–Dix / Hyyrö): one big-integer step per token of `b`."""
    masks: dict[str, int] = {}
    for position, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        matches = row & masks.get(token, 0)
        row = ((row + matches) | (row - matches)) & full
    return len(a) - bin(row).count("1")


def rouge_l(candidate: str, references: Sequence[str]) -> float:
    tokens = candidate.split(" ")
    precision = recall = 0.0
    for reference in references:
        ref_tokens = reference.split(" ")
        common = lcs_length(tokens, ref_tokens)
        precision = max(precision, common / len(tokens))
        recall = max(recall, common / len(ref_tokens))
    if precision == 0 or recall == 0:
        return 0.0
    return (1 + BETA**2) * precision * recall / (recall + BETA**2 * precision)


@register("rouge_l")
class RougeL(Metric):
    slug = "rouge_l"
    name = "ROUGE-L"
    family = "ngram"
    citation = "C.-Y. Lin (2004). ROUGE: A Package for Automatic Evaluation of Summaries. ACL Workshop."
    description = "Longest-common-subsequence F-measure (beta 1.2) against the best references."

    def config(self) -> dict:
        return {"beta": BETA, "tokenizer": "ptb-corenlp-3.4.1"}

    def warm(self) -> None:
        tokenizer_warm()

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        corpus = shared_corpus.get(rows)
        distinct = [rouge_l(c, r) for c, r in zip(corpus.candidates, corpus.references, strict=True)]
        scores = corpus.expand(distinct)
        return MetricResult(scores=scores, corpus=float(np.mean(scores)) if scores else None)
