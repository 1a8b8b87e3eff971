"""A batch of rows tokenised once and folded to its distinct (candidate, references) rows: the
n-gram metrics score each distinct row once and weight it by how often it occurs."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from capbench_eval.metrics.base import CaptionRow
from capbench_eval.metrics.ngram.tokenizer import ptb_tokenize

T = TypeVar("T")
MEMO_BATCHES, MEMO_ROWS = 8, 20_000


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
    """Keeps the last few batches' tokenised corpora, so BLEU-1..4, ROUGE-L, CIDEr-D and METEOR
    scoring the same rows tokenise and fold them once, even when a worker process takes batches of
    other captions in between (the batches of one job go to every process of a worker). At most
    MEMO_BATCHES corpora and MEMO_ROWS rows in all; the latest is always kept."""

    def __init__(self, batches: int = MEMO_BATCHES, rows: int = MEMO_ROWS) -> None:
        self.batches, self.rows = batches, rows
        self._kept: OrderedDict[tuple[tuple[str, tuple[str, ...]], ...], TokenizedCorpus] = OrderedDict()

    def get(self, rows: Sequence[CaptionRow]) -> TokenizedCorpus:
        key = tuple((row.candidate, row.references) for row in rows)
        corpus = self._kept.get(key)
        if corpus is None:
            corpus = self._kept[key] = tokenized_corpus(rows)
            total = sum(kept.size for kept in self._kept.values())
            while len(self._kept) > 1 and (len(self._kept) > self.batches or total > self.rows):
                total -= self._kept.popitem(last=False)[1].size
        else:
            self._kept.move_to_end(key)
        return corpus


shared_corpus = CorpusMemo()
