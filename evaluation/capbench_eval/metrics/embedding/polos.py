"""Polos (Wada, Kaneda, Saito and Sugiura, CVPR 2024), metrics.md §8: a supervised estimator
trained on Polaris human judgments, loaded from the authors' released checkpoint.

Per (candidate c, reference r) pair the head sees 4 SimCSE and 6 CLIP feature blocks

    [r, c, |c − r|, c ⊙ r,  v, c', |v − c'|, v ⊙ c', |r' − c'|, r' ⊙ c']

where r, c are the CLS rows of a learned scalar mix of every SimCSE-RoBERTa layer (each layer
normalised to zero mean and unit variance over the unmasked tokens first), and v, c', r' are the
RAW (not L2-normalised) CLIP ViT-B/32 projections of the image and of the "A photo depicts "-prefixed
texts. The blocks go through Linear/Tanh layers to one output, a sigmoid, and the score is the
maximum over the references, in [0, 1].

Our choices, versioned in `config()`:
- Layer normalisation scope. The released code normalises each layer with one mean and variance
  over every unmasked token of the whole BATCH, so a caption's score moves with the captions it
  happens to be batched with. We normalise over each sentence's own tokens: exactly what the
  released code computes at batch size 1, and the same number however a job is batched or cached.
  Papers' tables were computed with batches of 32, so they can differ from ours in the 3rd decimal.
- CLIP weights. The checkpoint carries a frozen copy of OpenAI ViT-B/32 (`clip.*`); we load the
  store's `ViT-B-32-quickgelu/openai` instead (CLIP-S's encoder; its own feature cache) after checking
  that every tensor the checkpoint holds equals it, and refuse if one does not. As in the reference,
  CLIP runs in fp16 on CUDA; SimCSE and the head run in fp32.
- Pictures are converted to RGB on opening, before CLIP's resize, as the reference does (CLIP-S
  and PAC-S convert after the crop; the feature cache keeps the two apart).

torch and transformers are imported inside the functions that use them: importing the metrics must
not load them (a CPU web process never needs them).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence

import numpy as np

from capbench_eval.backbones.catalogue import (
    CATALOGUE,
    Checkpoint,
    HfModel,
    OpenClipModel,
    file_sha256,
    folder_sha256,
    offline,
)
from capbench_eval.backbones.clip import RGB_ON_OPENING, clip_encoder
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.registry import register

PREFIX = "A photo depicts "
TEXT_MODEL = HfModel("princeton-nlp/sup-simcse-roberta-base")
CLIP_MODEL = OpenClipModel("ViT-B-32-quickgelu", "openai")
CHECKPOINT = CATALOGUE["polos/reprod.ckpt"]
NORM_SCOPE = "sentence"


def mix_layers(layers, mask, weights, gamma):
    """gamma · Σ_k softmax(w)_k · norm(layer_k), for layers (L, B, T, H) and mask (B, T); each layer
    of each sentence is normalised with the mean and variance over that sentence's unmasked tokens
    and all hidden units (eps 1e-12 on the variance)."""
    import torch

    keep = mask[None, :, :, None].to(layers.dtype)
    count = mask.sum(dim=1).to(layers.dtype)[None, :, None, None] * layers.shape[-1]
    mean = (layers * keep).sum(dim=(2, 3), keepdim=True) / count
    variance = (((layers * keep - mean) * keep) ** 2).sum(dim=(2, 3), keepdim=True) / count
    normalised = (layers - mean) / torch.sqrt(variance + 1e-12)
    share = torch.softmax(weights, dim=0)
    return gamma * (share[:, None, None, None] * normalised).sum(dim=0)


def pair_features(reference, candidate, image, candidate_clip, reference_clip):
    """The head's input for each row of the five (P, ·) blocks, in the released order."""
    import torch

    return torch.cat(
        [
            reference,
            candidate,
            torch.abs(candidate - reference),
            candidate * reference,
            image,
            candidate_clip,
            torch.abs(image - candidate_clip),
            image * candidate_clip,
            torch.abs(reference_clip - candidate_clip),
            reference_clip * candidate_clip,
        ],
        dim=1,
    )


def read_checkpoint(path) -> dict:
    """The state dict of a Lightning checkpoint (tensors only; hparams may be an argparse Namespace)."""
    import torch

    with torch.serialization.safe_globals([argparse.Namespace]):
        saved = torch.load(path, map_location="cpu", weights_only=True)
    return saved.get("state_dict", saved) if isinstance(saved, dict) else saved


def build_head(state: dict):
    """FeedForward(Linear, Tanh, dropout)* → Linear → Sigmoid, sized from the checkpoint's tensors."""
    import torch

    count = sum(1 for key in state if key.startswith("ff.0.ff.linear_") and key.endswith(".weight"))
    if not count:
        raise MetricUnavailable("the Polos checkpoint holds no ff.0.ff.linear_* layers")
    layers: list = []
    for index in range(1, count + 1):
        weight, bias = state[f"ff.0.ff.linear_{index}.weight"], state[f"ff.0.ff.linear_{index}.bias"]
        linear = torch.nn.Linear(weight.shape[1], weight.shape[0])
        linear.load_state_dict({"weight": weight, "bias": bias})
        layers.append(linear)
        layers.append(torch.nn.Tanh() if index < count else torch.nn.Sigmoid())
    return torch.nn.Sequential(*layers).float().eval()


class PolosModel(LazyModel):
    """The released estimator: SimCSE + scalar mix + head from the checkpoint, CLIP from the store."""

    def __init__(self, checkpoint: Checkpoint, text_model: HfModel, clip_model: OpenClipModel, text_batch: int = 64):
        self.checkpoint, self.text_model, self.text_batch = checkpoint, text_model, text_batch
        self.clip = clip_encoder(clip_model)
        self.device = best_device()
        super().__init__()

    def unavailable_reason(self) -> str | None:
        if not self.checkpoint.path.is_file():
            return self.checkpoint.missing()
        if not self.text_model.present():
            return self.text_model.missing()
        return self.clip.unavailable_reason()

    def fingerprint(self) -> str:
        if self.unavailable_reason():
            return "absent"
        return "/".join(
            [
                f"polos:{file_sha256(self.checkpoint.path)[:16]}",
                f"{self.text_model.name}:{folder_sha256(self.text_model.folder)[:16]}",
                self.clip.fingerprint(),
            ]
        )

    def build(self):
        self.require_available()
        offline()
        import torch
        from transformers import AutoModel, AutoTokenizer

        state = read_checkpoint(self.checkpoint.path)
        tokenizer = AutoTokenizer.from_pretrained(self.text_model.folder)
        encoder = AutoModel.from_pretrained(self.text_model.folder)
        self._load_encoder(encoder, state)
        layers = encoder.config.num_hidden_layers + 1
        mix = sorted(
            (key for key in state if key.startswith("scalar_mix.scalar_parameters.")),
            key=lambda key: int(key.rsplit(".", 1)[1]),
        )
        if len(mix) != layers:
            raise MetricUnavailable(
                f"the Polos checkpoint mixes {len(mix)} layers; {self.text_model.name} gives {layers}"
            )
        weights = torch.cat([state[key].reshape(-1) for key in mix]).float().to(self.device)
        gamma = state["scalar_mix.gamma"].reshape(()).float().to(self.device)
        head = build_head(state).to(self.device)
        self._check_clip(state)
        expected = 4 * encoder.config.hidden_size + 6 * self._clip_width()
        if head[0].in_features != expected:
            raise MetricUnavailable(
                f"the Polos head takes {head[0].in_features} features; "
                f"{self.text_model.name} and {self.clip.spec.name} give {expected}"
            )
        return (tokenizer, encoder.to(self.device).eval(), weights, gamma, head)

    def _load_encoder(self, encoder, state: dict) -> None:
        tensors = {
            key.removeprefix("encoder.model."): value
            for key, value in state.items()
            if key.startswith("encoder.model.")
        }
        if not tensors:
            return  # a head-only checkpoint: the store's (frozen) SimCSE weights are the ones trained with
        missing, unexpected = encoder.load_state_dict(tensors, strict=False)
        unexpected = [key for key in unexpected if not key.endswith("position_ids")]
        if missing or unexpected:
            raise MetricUnavailable(
                f"the Polos checkpoint's text encoder does not fit {self.text_model.name}: "
                f"missing {missing[:3]}, unexpected {unexpected[:3]}"
            )

    def _check_clip(self, state: dict) -> None:
        import torch

        held = {key.removeprefix("clip."): value for key, value in state.items() if key.startswith("clip.")}
        if not held:
            return
        model = self.clip.model()
        ours = model.state_dict()
        # Compared at the precision the encoder runs in (fp16 on a GPU): the checkpoint's fp32 copy
        # rounds to exactly the store's tensors when they are the same weights.
        differing = [
            key
            for key, value in held.items()
            if key in ours and not torch.equal(ours[key].cpu(), value.to(ours[key].dtype))
        ]
        if differing:
            raise MetricUnavailable(
                f"the Polos checkpoint's CLIP differs from {self.clip.spec.name} in the store "
                f"({len(differing)} tensors, e.g. {differing[0]})"
            )

    def _clip_width(self) -> int:
        return int(self.clip.encode_texts(["a"], normalise=False).shape[1])

    @in_use
    def sentence_embeddings(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """CLS row of the layer mix for each distinct text."""
        import torch

        tokenizer, encoder, weights, gamma, _ = self._load()
        distinct = list(dict.fromkeys(texts))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(distinct), self.text_batch):
            part = distinct[start : start + self.text_batch]
            batch = tokenizer(part, padding=True, truncation=True, max_length=512, return_tensors="pt").to(self.device)
            with torch.no_grad():
                hidden = encoder(**batch, output_hidden_states=True).hidden_states
                mixed = mix_layers(torch.stack(hidden).float(), batch["attention_mask"], weights, gamma)
            found.update(zip(part, mixed[:, 0, :].cpu().numpy(), strict=True))
        return found

    @in_use
    def score_pairs(
        self,
        references: np.ndarray,
        candidates: np.ndarray,
        images: np.ndarray,
        candidates_clip: np.ndarray,
        references_clip: np.ndarray,
    ) -> np.ndarray:
        import torch

        *_, head = self._load()
        tensors = [
            torch.from_numpy(np.asarray(block, dtype=np.float32)).to(self.device)
            for block in (references, candidates, images, candidates_clip, references_clip)
        ]
        with torch.no_grad():
            return head(pair_features(*tensors)).reshape(-1).cpu().numpy()


@functools.lru_cache(maxsize=2)
def polos_model(checkpoint: Checkpoint, text_model: HfModel, clip_model: OpenClipModel) -> PolosModel:
    return PolosModel(checkpoint, text_model, clip_model)


@register("polos")
class Polos(Metric):
    slug, name, family = "polos", "Polos", "embedding"
    extra = "bertscore"
    needs = frozenset({"media", "references", "gpu"})
    citation = (
        "Y. Wada, K. Kaneda, D. Saito and K. Sugiura (2024). Polos: Multimodal Metric Learning from "
        "Human Feedback for Image Captioning. CVPR."
    )
    description = (
        "Supervised estimator on SimCSE and CLIP features trained on Polaris human judgments; "
        "best over references, in [0, 1]."
    )
    notes = (
        "Each SimCSE layer is normalised over one sentence's own tokens (the released code pools the whole batch, "
        "so its scores move with batch composition); this equals the released code at batch size 1.",
        "CLIP ViT-B/32 comes from the model store, checked tensor by tensor against the copy inside the checkpoint; "
        "fp16 on CUDA as in the reference, SimCSE and the head in fp32.",
    )

    @property
    def model(self) -> PolosModel:
        return polos_model(CHECKPOINT, TEXT_MODEL, CLIP_MODEL)

    def config(self) -> dict:
        return {"prefix": PREFIX, "layer_norm_scope": NORM_SCOPE, "weights": self.model.fingerprint()}

    def unavailable_reason(self) -> str | None:
        return self.model.unavailable_reason()

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        model = self.model
        self.require_available()
        if any(not row.media for row in rows):
            raise ValueError(
                f"Polos needs the image of every row; rows without one: {[row.id for row in rows if not row.media][:5]}"
            )
        if any(not row.references for row in rows):
            raise ValueError("Polos needs at least one reference per row")
        pairs = [(index, row.candidate, ref) for index, row in enumerate(rows) for ref in row.references]
        texts = list(dict.fromkeys([row.candidate for row in rows] + [ref for *_, ref in pairs]))
        sentences = model.sentence_embeddings(texts)
        clip_texts = dict(
            zip(texts, model.clip.encode_texts([PREFIX + text for text in texts], normalise=False), strict=True)
        )
        images = model.clip.encode_images(
            [row.media for row in rows if row.media],
            cache=model.clip.feature_cache(RGB_ON_OPENING),
            normalise=False,
            rgb=RGB_ON_OPENING,  # the reference converts on opening, before CLIP's transform
        )  # (every row has one: checked above)
        values = model.score_pairs(
            references=np.stack([sentences[ref] for *_, ref in pairs]),
            candidates=np.stack([sentences[candidate] for _, candidate, _ in pairs]),
            images=images[[index for index, *_ in pairs]],
            candidates_clip=np.stack([clip_texts[candidate] for _, candidate, _ in pairs]),
            references_clip=np.stack([clip_texts[ref] for *_, ref in pairs]),
        )
        scores, details, start = [], [], 0
        for row in rows:
            mine = [float(value) for value in values[start : start + len(row.references)]]
            start += len(row.references)
            scores.append(max(mine))
            details.append({"per_reference": mine, "best_reference": int(np.argmax(mine))})
        return MetricResult(scores=scores, corpus=float(np.mean(scores)) if scores else None, details=details)
