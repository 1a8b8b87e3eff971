"""The FACTUAL scene-graph parser (Li et al. 2023): `lizhuang144/flan-t5-base-VG-factual-sg`, a
Flan-T5 that reads "Generate Scene Graph: <text>" and writes "( subj , pred , obj ) , ( … )", with
`is` for attributes and counts and "( entity )" for a lone entity. Run through transformers from the
store with the FactualSceneGraph package's settings: inputs cut at 64 tokens, beam search of 5,
at most 128 output tokens; each sentence of a multi-sentence text is parsed on its own and the
triplets merged (its "sentence_merge"), so long references are not cut.

torch and transformers are imported inside the methods that use them: importing the metrics must not
load them (a CPU web process never needs them)."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from capbench_eval.backbones.catalogue import HfModel, folder_sha256, offline
from capbench_eval.backbones.device import best_device
from capbench_eval.backbones.lazy import LazyModel, in_use

PREFIX = "Generate Scene Graph: "
TUPLE = re.compile(r"\(([^()]*)\)")
SENTENCE = re.compile(r"(?<=[.!?])\s+")


def triplets_from_output(text: str) -> list[tuple[str, ...]]:
    """The parser's output as tuples of stripped parts (1 for a lone entity, else 3), each once, in
    order; anything else in the text (an unclosed tuple, a 2-part one) is left out."""
    found = []
    for inner in TUPLE.findall(text):
        parts = tuple(part.strip() for part in inner.split(","))
        if len(parts) in (1, 3) and all(parts) and parts not in found:
            found.append(parts)
    return found


def phrase(triplet: tuple[str, ...]) -> str:
    """A triplet as the short sentence the text encoder reads: "subject predicate object" (an
    attribute reads "dog is brown"), a lone entity as itself."""
    return " ".join(triplet)


class SceneGraphParser(LazyModel):
    def __init__(self, model: HfModel, *, beams: int = 5, max_input: int = 64, max_output: int = 128, batch: int = 32):
        self.spec, self.beams, self.max_input, self.max_output, self.batch = model, beams, max_input, max_output, batch
        self.device = best_device()
        super().__init__()
        self._parsed: dict[str, list[tuple[str, ...]]] = {}
        self.remembered = 200_000

    def unavailable_reason(self) -> str | None:
        return None if self.spec.present() else self.spec.missing()

    def fingerprint(self) -> str:
        return f"{self.spec.name}@{folder_sha256(self.spec.folder)[:16] if self.spec.present() else 'absent'}"

    def build(self):
        offline()
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.spec.folder)
        model = AutoModelForSeq2SeqLM.from_pretrained(self.spec.folder).to(self.device).eval()
        return (tokenizer, model)

    def parse(self, texts: Sequence[str]) -> list[list[tuple[str, ...]]]:
        """The triplets of each text (sentences parsed apart and merged); each sentence once per process."""
        sentences = {text: [s for s in SENTENCE.split(text.strip()) if s] for text in texts}
        todo = list(dict.fromkeys(s for parts in sentences.values() for s in parts if s not in self._parsed))
        if len(self._parsed) + len(todo) > self.remembered:
            self._parsed.clear()  # a long-lived worker keeps a bounded memo
        for start in range(0, len(todo), self.batch):
            part = todo[start : start + self.batch]
            for sentence, output in zip(part, self._generate(part), strict=True):
                self._parsed[sentence] = triplets_from_output(output)
        out = []
        for text in texts:
            merged: list[tuple[str, ...]] = []
            for sentence in sentences[text]:
                merged.extend(t for t in self._parsed[sentence] if t not in merged)
            out.append(merged)
        return out

    @in_use
    def _generate(self, sentences: list[str]) -> list[str]:
        import torch

        tokenizer, model = self._load()
        inputs = tokenizer(
            [PREFIX + s for s in sentences],
            max_length=self.max_input,
            truncation=True,
            padding=True,
            return_tensors="pt",
        ).to(self.device)
        with self._lock, torch.no_grad():
            generated = model.generate(
                **inputs,
                num_beams=self.beams,
                max_length=self.max_output,
                decoder_start_token_id=model.config.pad_token_id,
                early_stopping=True,
            )
        return tokenizer.batch_decode(generated, skip_special_tokens=True)


@functools.lru_cache(maxsize=2)
def scene_graph_parser(model: HfModel) -> SceneGraphParser:
    return SceneGraphParser(model)
