"""BERTScore F1 as bert-score computes it with lang="en" (metrics.md §9): roberta-large, layer 17,
idf off, greedy cosine matching of L2-normalised token embeddings. The similarity matrix includes
<s> and </s> but their weight is 0 wherever their ids occur (also inside a caption that holds the
text "</s>"); P, R and F are each maximised over the references independently. An empty sentence
(or one of special tokens only) gives P = R = 0. Optional baseline rescaling (x − b)/(1 − b).

torch and transformers are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from capbench_eval.backbones.catalogue import HfModel, folder_sha256, offline
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.registry import register

MODEL = HfModel("roberta-large")
LAYER = 17
BASELINE = {
    "P": 0.83150584,
    "R": 0.8314941,
    "F": 0.83122575,
}  # layer 17 of bert-score's English roberta-large baseline (docs/metrics.md, BERTScore)


def greedy_match(
    candidate: np.ndarray, reference: np.ndarray, candidate_weights: np.ndarray, reference_weights: np.ndarray
) -> tuple[float, float, float]:
    """P, R, F of two sequences of L2-normalised token embeddings (rows), weights summing to 1."""
    if not candidate_weights.sum() or not reference_weights.sum():
        return 0.0, 0.0, 0.0
    similarity = candidate @ reference.T
    precision = float(similarity.max(axis=1) @ candidate_weights)
    recall = float(similarity.max(axis=0) @ reference_weights)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


class TokenEmbedder(LazyModel):
    """roberta-large (or what the store holds under that name) through transformers, layer 17."""

    def __init__(self, model: HfModel, layer: int, batch: int = 256, precision: str = "fp32"):
        """`batch`: texts per forward pass at first (256 is ×1.29 faster than 64 on an H100 with the
        same scores, docs/performance.md); halved on CUDA out-of-memory and kept so.
        `precision` other than fp32 (bf16, fp16: CUDA only) is for measuring what half precision
        would change (bench/text.py prints the largest F1 difference); the metric runs fp32, as
        bert-score does."""
        self.spec, self.layer, self.batch, self.precision = model, layer, batch, precision
        self.device = best_device()
        super().__init__()

    def build(self):
        if not self.spec.present():
            raise MetricUnavailable(self.spec.missing())
        offline()
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.spec.folder, add_prefix_space=True)
        import torch

        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[self.precision]
        model = AutoModel.from_pretrained(self.spec.folder, dtype=dtype).to(self.device).eval()
        if model.config.num_hidden_layers < self.layer:
            raise MetricUnavailable(
                f"{self.spec.name} has {model.config.num_hidden_layers} layers; BERTScore reads layer {self.layer}"
            )
        # Layer 17's output is all BERTScore reads: the layers above it are never run.
        model.encoder.layer = model.encoder.layer[: self.layer]
        return (tokenizer, model)

    @in_use
    def embed(self, texts: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per text: normalised token embeddings and idf-off weights (0 on every <s> and </s>)."""
        import torch

        tokenizer, model = self._load()
        unique = list(dict.fromkeys(texts))
        encoded = dict(zip(unique, self.token_ids(unique), strict=True))
        special = [tokenizer.cls_token_id, tokenizer.sep_token_id]
        # Longest first, so each batch is padded to about its own length.
        distinct = sorted(encoded, key=lambda text: -len(encoded[text]))
        found, start = {}, 0
        while start < len(distinct):
            part = distinct[start : start + self.batch]
            ids = [encoded[text] for text in part]
            try:
                hidden = self._layer(model, tokenizer.pad_token_id, ids)
            except torch.OutOfMemoryError:
                if len(part) == 1:
                    raise
                torch.cuda.empty_cache()
                self.batch = max(1, len(part) // 2)  # remembered: the size this device holds
                continue
            for index, (text, row) in enumerate(zip(part, ids, strict=True)):
                # bert-score's idf-off weights: 0 for the ids of <s> and </s> wherever they stand (a
                # caption holding the text "</s>" is tokenised to that id), 1 for every other token.
                weights = 1.0 - np.isin(row, special).astype(float)
                total = weights.sum()
                found[text] = (hidden[index, : len(row)], weights / total if total else weights)
            start += len(part)
        return [found[text] for text in texts]

    def _layer(self, model, pad_id: int, ids: list[list[int]]) -> np.ndarray:
        """Layer `self.layer`'s L2-normalised token embeddings of a padded batch (float32, on the CPU)."""
        import torch

        width = max(len(row) for row in ids)
        padded = torch.full((len(ids), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for index, row in enumerate(ids):
            padded[index, : len(row)] = torch.tensor(row)
            mask[index, : len(row)] = 1
        with torch.no_grad():
            output = model(
                input_ids=padded.to(self.device), attention_mask=mask.to(self.device), output_hidden_states=True
            )
            hidden = output.hidden_states[self.layer].float()
            return (hidden / hidden.norm(dim=-1, keepdim=True)).cpu().numpy()

    @in_use
    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids with <s> and </s>, stripped and cut at the model's length. One call for
        all texts: the fast tokenizer works through the list in Rust, many times quicker than one
        `encode` per text."""
        tokenizer, _ = self._load()
        return tokenizer(
            [text.strip() for text in texts],
            add_special_tokens=True,
            truncation=True,
            max_length=tokenizer.model_max_length,
        )["input_ids"]

    def fingerprint(self) -> str:
        return f"{self.spec.name}/{folder_sha256(self.spec.folder)[:16]}" if self.spec.present() else "absent"


@functools.lru_cache(maxsize=4)
def token_embedder(model: HfModel, layer: int) -> TokenEmbedder:
    return TokenEmbedder(model, layer)


@register("bertscore")
class BertScore(Metric):
    slug, name, family = "bertscore", "BERTScore", "embedding"
    extra = "bertscore"
    # 2: weight 0 on every <s>/</s> id, not only on the first and last token (as bert-score does).
    version = "2"
    needs = frozenset({"references", "gpu"})
    citation = "T. Zhang, V. Kishore, F. Wu, K. Q. Weinberger and Y. Artzi (2020). BERTScore. ICLR."
    description = "F1 of greedy token matching with roberta-large layer-17 embeddings, best reference."

    def __init__(self, rescale: bool = False):
        self.rescale = rescale

    @property
    def embedder(self) -> TokenEmbedder:
        return token_embedder(MODEL, LAYER)

    def config(self) -> dict:
        return {
            "model": MODEL.name,
            "layer": LAYER,
            "idf": False,
            "rescale": self.rescale,
            "weights": self.embedder.fingerprint(),
        }

    def unavailable_reason(self) -> str | None:
        return None if MODEL.present() else MODEL.missing()

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        self.require_available()
        if any(not row.references for row in rows):
            raise ValueError("BERTScore needs at least one reference per row")
        texts = [row.candidate for row in rows] + [ref for row in rows for ref in row.references]
        embedded = dict(zip(texts, self.embedder.embed(texts), strict=True))
        scores, details = [], []
        for row in rows:
            candidate = embedded[row.candidate]
            triples = [
                greedy_match(candidate[0], embedded[ref][0], candidate[1], embedded[ref][1]) for ref in row.references
            ]
            best = {key: max(t[i] for t in triples) for i, key in enumerate("PRF")}  # each maximised alone
            if self.rescale:
                best = {key: (value - BASELINE[key]) / (1 - BASELINE[key]) for key, value in best.items()}
            scores.append(best["F"])
            details.append(best)
        return MetricResult(scores=scores, corpus=float(np.mean(scores)) if scores else None, details=details)
