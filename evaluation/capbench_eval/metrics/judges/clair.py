"""CLAIR (Chan et al. 2023), metrics.md §15: a text-only LLM judges whether the candidate and the
references describe the same image, answering JSON {"score": 0–100, "reason": …}; reported on 0–1.
The prompt is the released one byte for byte, and the reply is read as the released code reads it.
Temperature 0; an answer without a score is asked again (up to 3 draws), then recorded as failed."""

from __future__ import annotations

from capbench_eval.metrics.base import CaptionRow
from capbench_eval.metrics.judges.backends import JudgeParams, JudgeReply, JudgeRequest, api_backend
from capbench_eval.metrics.judges.base import JudgeMetric, RowProblem
from capbench_eval.metrics.judges.parsing import clair_score
from capbench_eval.metrics.judges.prompts import fill
from capbench_eval.metrics.registry import register


@register("clair")
class Clair(JudgeMetric):
    slug, name = "clair", "CLAIR"
    # 2: the released prompt byte for byte (a blank line after each list, a final newline); the reply
    # read as the reference reads it (the first JSON object's score, else the reply's first number).
    version = "2"
    needs = frozenset({"references", "api"})
    params = JudgeParams(temperature=0.0, max_tokens=1024, top_logprobs=0)
    assumed_completion_tokens = 60
    prompts = ("clair/clair.txt",)
    citation = (
        "D. M. Chan, S. Petryk, J. E. Gonzalez, T. Darrell and J. Canny (2023). CLAIR: Evaluating Image "
        "Captions with Large Language Models. EMNLP."
    )
    description = "LLM judge of whether candidate and references describe the same image (JSON score/100)."
    notes = (
        "One LLM (the configured endpoint), not the paper's CLAIR_E ensemble of several.",
        "A reply whose score lies outside 0–100 is a failure, not clipped.",
        "A first JSON object whose score float() cannot read (where the reference crashes), or a boolean score, "
        "is a failure; so is a reply without any number (the reference says 0).",
    )

    def backend(self):
        return api_backend()

    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        if not row.references:
            raise RowProblem("CLAIR needs at least one reference")
        prompt = fill(
            "clair/clair.txt",
            candidates=f"- {row.candidate}\n",
            references="".join(f"- {ref}\n" for ref in row.references),
        )
        return JudgeRequest(prompt, sample=draw)

    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        value, reason = clair_score(reply.text)
        return value, {"reason": reason}
