"""The bert-score package (a dev dependency) as BERTScore's oracle, on the store's tiny model."""

from __future__ import annotations

import sys
from unittest import mock

import numpy as np


def package_score(folder, candidates: list[str], references: list[str]):
    """bert_score.score's (P, R, F) tensors, one per (candidate, reference) pair, layer 17, idf off.

    Under transformers 5 `encode(..., add_prefix_space=True)` (what bert-score passes) is silently
    ignored; the option must be given when the tokenizer is built, as we do. The oracle gets the same."""
    import bert_score
    from transformers import AutoTokenizer

    module = sys.modules["bert_score.score"]  # the module (the package attribute is the function)

    def tokenizer(model_type, use_fast=False):
        return AutoTokenizer.from_pretrained(model_type, add_prefix_space=True)

    with mock.patch.object(module, "get_tokenizer", tokenizer):
        return bert_score.score(
            candidates, references, model_type=str(folder), num_layers=17, idf=False, batch_size=8, device="cpu"
        )


def package_best(folder, rows) -> list[dict]:
    """Per row, P, R and F of bert-score for each reference alone (one call for every pair), each
    maximised over the row's references."""
    pairs = [(row.candidate, reference) for row in rows for reference in row.references]
    p, r, f = package_score(folder, [c for c, _ in pairs], [ref for _, ref in pairs])
    found, start = [], 0
    for row in rows:
        end = start + len(row.references)
        found.append({"P": p[start:end].max().item(), "R": r[start:end].max().item(), "F": f[start:end].max().item()})
        start = end
    return found


def prf(details: list[dict]) -> np.ndarray:
    """(rows × 3) P, R, F, for pytest.approx."""
    return np.array([[detail[key] for key in "PRF"] for detail in details])
