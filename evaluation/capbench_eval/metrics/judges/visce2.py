"""VisCE² (seed 000), metrics.md §14: a vision-language model first writes a structured visual
context of the image (objects, their features, their relationships), once per image; then it rates
each candidate 0–100 given the image and that context.

Two parses of the rating are kept: the released one (the first run of digits, unclipped, none → 0)
in the detail as `reference_parse`, and ours as the score: the first number must lie in 0–100, and
a reply without one is drawn again and then recorded as a failure, never as 0. Temperature 0.2 as
released, with the sampling seed pinned; contexts and ratings are cached, so a re-run is identical.
"""

from __future__ import annotations

from collections.abc import Sequence

from capbench_eval import config
from capbench_eval.backbones.catalogue import HfModel, entry
from capbench_eval.metrics.base import CaptionRow
from capbench_eval.metrics.judges.backends import (
    Backend,
    JudgeFailed,
    JudgeParams,
    JudgeReply,
    JudgeRequest,
    ReplyCache,
    configured_backend,
)
from capbench_eval.metrics.judges.base import JudgeMetric, RowProblem, image_bytes
from capbench_eval.metrics.judges.parsing import first_integer, strict_rating
from capbench_eval.metrics.judges.prompts import fill, prompt_text
from capbench_eval.metrics.registry import register

LLAVA = entry("llava-hf/llava-1.5-13b-hf", HfModel)
CONTEXT_PROMPT, RATING_PROMPT = "visce2/visual_context.txt", "visce2/evaluate.txt"


@register("visce2")
class VisCE2(JudgeMetric):
    slug, name = "visce2", "VisCE²"
    # 2: on LLaVA-1.5, both steps inside LLaVA's llava_v1 conversation (its system line) with the picture
    # padded to a square, as the released code runs it (backends.LLAVA_V1_SYSTEM); v1 sent llava-hf's bare
    # "USER: …" turn with a centre-cropped picture.
    version = "2"
    points = 1.0  # rates 0–100 already
    needs = frozenset({"media", "gpu"})
    params = JudgeParams(temperature=0.2, max_tokens=1024, top_logprobs=0, seed=0)
    prompts = (CONTEXT_PROMPT, RATING_PROMPT)
    citation = (
        "Vision Language Model-based Caption Evaluation Method Leveraging Visual Context Extraction "
        "(VisCE², 2024); github.com/Silviase/VisCE2."
    )
    description = "A VLM extracts objects, attributes and relations, then rates the caption 0–100 with them."
    notes = (
        "Score = our strict parse (first number, must be within 0–100; none → failure). The released parse "
        "(first digits, unclipped, none → 0) is kept in each score's detail as reference_parse.",
        "LLaVA-1.5-13B through transformers (llava-hf) in fp16, not the released 4-bit original-LLaVA loader; "
        "temperature 0.2 with a pinned seed. CAPBENCH_VISCE2_MODEL picks another vision-language model of the "
        "store (Qwen2-VL, LLaVA-1.5-7B); CAPBENCH_VISCE2_BACKEND=api sends both steps to the judge endpoint.",
        "On LLaVA-1.5 both steps go inside LLaVA's llava_v1 conversation (its system line first) with the picture "
        "padded to a square of the processor's mean colour, as the released code runs LLaVA; llava-hf's own "
        "template has no system line and its processor crops the centre.",
    )

    assumed_completion_tokens = 10  # the rating: the prompt asks for a single number
    assumed_context_tokens = 250  # step 1: a list of objects, attributes and relations
    # Step 1's reply per image path (None: the file could not be read), set by `prepare` or `planned`.
    _contexts: dict[str, JudgeReply | JudgeFailed | None]

    def backend(self) -> Backend:
        return configured_backend(config.Library.visce2_backend, config.Library.visce2_model, LLAVA)

    def planned(
        self, rows: Sequence[CaptionRow], backend: Backend, cache: ReplyCache, completion: float
    ) -> tuple[list[tuple[JudgeRequest, float]], int]:
        """Step 1 per distinct image, then the ratings; a context not yet written is stood in for by
        text of the assumed length, so the ratings' prompts are counted at about their real size."""
        contexts: list[tuple[JudgeRequest, float]] = []
        self._contexts = {}
        for path in dict.fromkeys(row.media for row in rows if row.media):
            try:
                request = JudgeRequest(prompt_text(CONTEXT_PROMPT), *image_bytes(path))
            except OSError:
                continue
            contexts.append((request, self.assumed_context_tokens))
            known = cache.get(request.key(backend.fingerprint(), self.params))
            self._contexts[path] = known or JudgeReply("the " * self.assumed_context_tokens, [])
        rated, unjudgeable = super().planned(rows, backend, cache, completion)
        return contexts + rated, unjudgeable

    def prepare(self, rows: Sequence[CaptionRow], backend: Backend, cache: ReplyCache) -> None:
        """Step 1, once per distinct image (and cached across jobs)."""
        media = list(dict.fromkeys(row.media for row in rows if row.media))
        requests: list[JudgeRequest | None] = []
        for path in media:
            try:
                requests.append(JudgeRequest(prompt_text(CONTEXT_PROMPT), *image_bytes(path)))
            except OSError:
                requests.append(None)
        asked = [r for r in requests if r is not None]
        replies = iter(backend.complete(asked, self.params, cache))
        self._contexts = {
            path: (next(replies) if request is not None else None)
            for path, request in zip(media, requests, strict=True)
        }

    def visual_context(self, media: str | None) -> str:
        reply = self._contexts.get(media) if media else None
        if reply is None or not isinstance(reply, JudgeReply):
            raise RowProblem(
                f"no visual context for this image: {reply}" if reply else "the image or video file is not attached"
            )
        return reply.text

    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        if not row.media:
            raise RowProblem("VisCE² needs the image of this caption")
        prompt = fill(RATING_PROMPT, candidate=row.candidate, context=self.visual_context(row.media))
        return JudgeRequest(prompt, *image_bytes(row.media), sample=draw)

    def shared_detail(self, row: CaptionRow) -> dict:
        return {"visual_context": self.visual_context(row.media)}

    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        return strict_rating(reply.text), {"reference_parse": first_integer(reply.text)}
