"""FLEUR (metrics.md §16): LLaVA-1.5 prints a score from 0.0 to 1.0 for the caption, and the score
is smoothed with the model's own digit probabilities at the printed decimals:
Σ_d p(d)·d·0.1 at the first decimal (+ Σ_d p(d)·d·0.01 at a second), and for a printed 1.0,
0.9·p("0") + p("1") at the "1". The decimals are read as the reference reads them, through
str(float(printed)): a trailing zero is dropped, so "0.70" has no second decimal term. Greedy
decoding, at most 512 new tokens."""

from __future__ import annotations

from capbench_eval import config
from capbench_eval.backbones.catalogue import HfModel
from capbench_eval.metrics.base import CaptionRow
from capbench_eval.metrics.judges.backends import JudgeParams, JudgeReply, JudgeRequest, configured_backend
from capbench_eval.metrics.judges.base import JudgeMetric, RowProblem, image_bytes
from capbench_eval.metrics.judges.parsing import DIGITS, fleur_smoothed
from capbench_eval.metrics.judges.prompts import fill
from capbench_eval.metrics.judges.visce2 import LLAVA
from capbench_eval.metrics.registry import register

PROMPT = "fleur/fleur.txt"
MODEL: HfModel = LLAVA


@register("fleur")
class Fleur(JudgeMetric):
    slug, name = "fleur", "FLEUR"
    # 2: the printed decimals read as the reference reads them (trailing zeros dropped: "0.70" has no
    # second-decimal term); a printed score above 1.0 is unparseable.
    # 3: on LLaVA-1.5, the prompt inside LLaVA's llava_v1 conversation (its system line) with the picture
    # padded to a square, as the released fleur.py runs it (backends.LLAVA_V1_SYSTEM).
    version = "3"
    needs = frozenset({"media", "gpu"})
    params = JudgeParams(temperature=0.0, max_tokens=512, top_logprobs=20)
    assumed_completion_tokens = 60
    prompts = (PROMPT,)
    citation = (
        "FLEUR: An Explainable Reference-Free Evaluation Metric for Image Captioning Using a Large "
        "Multimodal Model (ACL 2024); github.com/Yebin46/FLEUR."
    )
    description = "LLaVA prints a 0.0–1.0 score; smoothed by its own probabilities of each decimal digit."
    notes = (
        "Through an OpenAI-compatible endpoint the digit probabilities come from the top-20 alternatives "
        "(digits outside them count 0); the local model reads them from the full vocabulary.",
        "On LLaVA-1.5 the prompt goes inside LLaVA's llava_v1 conversation (its system line first) with the "
        "picture padded to a square of the processor's mean colour, as fleur.py runs LLaVA (--image-aspect-ratio "
        "pad); llava-hf's own template has no system line and its processor crops the centre.",
    )

    def backend(self):
        return configured_backend(config.Library.fleur_backend, config.Library.fleur_model, MODEL)

    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        if not row.media:
            raise RowProblem("FLEUR needs the image of this caption")
        return JudgeRequest(
            fill(PROMPT, candidate=row.candidate), *image_bytes(row.media), sample=draw, watch=tuple(DIGITS)
        )

    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        digits = reply.watched or [{d: lp for d, lp in token.top.items() if d in DIGITS} for token in reply.tokens]
        smoothed = fleur_smoothed(reply.tokens, digits)
        return smoothed.value, {
            "printed": smoothed.printed,
            "digit_probabilities": [{str(k): v for k, v in p.items()} for p in smoothed.digit_probabilities],
        }
