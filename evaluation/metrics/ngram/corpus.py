"""A batch of rows tokenised once and folded to its distinct (candidate, references) rows: the
n-gram metrics score each distinct row once and weight it by how often it occurs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from evaluation.metrics.base import CaptionRow
from evaluation.metrics.ngram.tokenizer import ptb_tokenize

T = TypeVar("T")


@dataclass
class TokenizedCorpus:
    candidates: list[str]  # per distinct row, PTB-tokenised
    references: list[tuple[str, ...]]
    multiplicity: list[int]  # how many input rows each distinct row stands for
    row_to_distinct: list[int]  # input row -> distinct row

    @property
    def size(self) -> int:
        return len(self.row_to_distinct)

    def expand(self, values: Sequence[T]) -> list[T]:
        """Per input row, the value of its distinct row."""
        return [values[index] for index in self.row_to_distinct]


def tokenized_corpus(rows: Sequence[CaptionRow]) -> TokenizedCorpus:
    for row in rows:
        if not row.references:
            raise ValueError(f"row {row.id!r}: this metric needs at least one reference")
    texts = [row.candidate for row in rows] + [ref for row in rows for ref in row.references]
    tokens = ptb_tokenize(texts)
    candidates, cursor = tokens[: len(rows)], len(rows)
    index: dict[tuple[str, tuple[str, ...]], int] = {}
    corpus = TokenizedCorpus([], [], [], [])
    for row, candidate in zip(rows, candidates, strict=True):
        references = tuple(tokens[cursor : cursor + len(row.references)])
        cursor += len(row.references)
        key = (candidate, references)
        if key not in index:
            index[key] = len(corpus.candidates)
            corpus.candidates.append(candidate)
            corpus.references.append(references)
            corpus.multiplicity.append(0)
        corpus.multiplicity[index[key]] += 1
        corpus.row_to_distinct.append(index[key])
    return corpus


class CorpusMemo:
    """Keeps the last batch's tokenised corpus, so BLEU-1..4, ROUGE-L and CIDEr-D scoring the same
    rows one after the other tokenise once."""

    def __init__(self) -> None:
        self._last: tuple[tuple[tuple[str, tuple[str, ...]], ...], TokenizedCorpus] | None = None  # (key, corpus)

    def get(self, rows: Sequence[CaptionRow]) -> TokenizedCorpus:
        key = tuple((row.candidate, row.references) for row in rows)
        if self._last is None or key != self._last[0]:
            self._last = (key, tokenized_corpus(rows))
        return self._last[1]


shared_corpus = CorpusMemo()
