"""G-VEval (Tang et al. 2024), metrics.md §13: a GPT-4o-style judge writes its reasoning and ends
with "The final score is $N$."; the score is the expectation Σ i·p(i) over the numeric top-5
alternatives at the token after the first `$`, renormalised. ACCR (video) reads four such
expectations after α, β, ψ, δ and reports their mean (the four are kept in the detail).

Videos are shown as the 3-frame composite (video.py) at detail "high"; images are sent as their own
file at detail "low". Without a picture (ref-only) the prompt goes as one system message.
"""

from __future__ import annotations

from capbench_eval.metrics.base import CaptionRow
from capbench_eval.metrics.judges.backends import JudgeParams, JudgeReply, JudgeRequest, api_backend
from capbench_eval.metrics.judges.base import JudgeMetric, RowProblem, image_bytes
from capbench_eval.metrics.judges.parsing import accr_scores, expected_after_marker
from capbench_eval.metrics.judges.prompts import fill
from capbench_eval.metrics.judges.video import is_video, video_composite_png
from capbench_eval.metrics.registry import register

CITATION = (
    "G-VEval: A Versatile Metric for Evaluating Image and Video Captions Using GPT-4o (2024); "
    "github.com/ztangaj/gveval."
)


def references_text(references) -> str:
    """The released formatting: a leading quote, "'; '" between references, no closing quote."""
    return "'" + "'; '".join(references)


class _GVEval(JudgeMetric):
    setting = ""  # ref-free / ref-only / combined
    points = 1.0  # expected scores over 0–100 already
    uses_image = True
    uses_references = True
    params = JudgeParams(temperature=1.0, top_p=1.0, top_logprobs=5)
    citation = CITATION
    notes = (
        "Ref-only sends no picture (the released evaluate_gveval attaches the image even for ref-only; "
        "we follow the setting's definition).",
        "The composite frames are labelled with Pillow's font, not OpenCV's Hershey font; the PNG is sent "
        "labelled image/png (the released code labels it image/jpeg).",
    )

    def backend(self):
        return api_backend()

    def picture(self, row: CaptionRow) -> tuple[bytes, str, str]:
        if not row.media:
            raise RowProblem(f"{self.name} needs the image or video of this caption")
        if is_video(row.media):
            return video_composite_png(row.media), "image/png", "high"
        content, mime = image_bytes(row.media)
        return content, mime, "low"

    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        video = is_video(row.media) if row.media else False
        values = {"Caption": row.candidate}
        if self.uses_references:
            if not row.references:
                raise RowProblem(f"{self.name} needs at least one reference")
            values["Reference"] = references_text(row.references)
        prompt = fill(f"gveval/{'vid' if video else 'img'}/{self.setting}.txt", **values)
        if not self.uses_image:
            return JudgeRequest(prompt, as_system=True, sample=draw)
        content, mime, detail = self.picture(row)
        return JudgeRequest(prompt, content, mime, detail, sample=draw)

    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        found = expected_after_marker(reply.tokens, "$")
        return found.value, {"distribution": {str(k): v for k, v in found.distribution.items()}}


@register("gveval_ref_free")
class GVEvalRefFree(_GVEval):
    slug, name, setting = "gveval_ref_free", "G-VEval (ref-free)", "ref-free"
    prompts = ("gveval/img/ref-free.txt", "gveval/vid/ref-free.txt")
    uses_references = False
    needs = frozenset({"media", "api"})
    description = "GPT-4o judge with chain-of-thought, image only; expected score over 0–100 from logprobs."


@register("gveval_ref_only")
class GVEvalRefOnly(_GVEval):
    slug, name, setting = "gveval_ref_only", "G-VEval (ref-only)", "ref-only"
    prompts = ("gveval/img/ref-only.txt", "gveval/vid/ref-only.txt")
    uses_image = False
    needs = frozenset({"references", "api"})
    description = "GPT-4o judge with chain-of-thought, references only; expected score over 0–100 from logprobs."


@register("gveval_combined")
class GVEvalCombined(_GVEval):
    slug, name, setting = "gveval_combined", "G-VEval (combined)", "combined"
    prompts = ("gveval/img/combined.txt", "gveval/vid/combined.txt")
    needs = frozenset({"media", "references", "api"})
    description = "GPT-4o judge with chain-of-thought, image and references; expected score over 0–100."


@register("gveval_accr")
class GVEvalAccr(_GVEval):
    slug, name, setting = "gveval_accr", "G-VEval ACCR (video)", "accr"
    needs = frozenset({"media", "references", "api"})
    description = (
        "Video judge on accuracy, completeness, conciseness and relevance (expected scores after "
        "α β ψ δ); reports their mean."
    )
    notes = (
        "The ref-only ACCR prompt with the 3-frame composite attached: the published MSVD-Eval protocol "
        "(the released code attaches the frames in its ref-only runs).",
    ) + _GVEval.notes[1:]
    prompts = ("gveval/vid/accr/ref-only.txt",)
    assumed_completion_tokens = 300  # four reasoned dimensions

    def request(self, row: CaptionRow, draw: int) -> JudgeRequest:
        if not row.media or not is_video(row.media):
            raise RowProblem("G-VEval ACCR judges videos; this caption's media is not a video")
        if not row.references:
            raise RowProblem(f"{self.name} needs at least one reference")
        prompt = fill("gveval/vid/accr/ref-only.txt", Caption=row.candidate, Reference=references_text(row.references))
        content, mime, detail = self.picture(row)
        return JudgeRequest(prompt, content, mime, detail, sample=draw)

    def parse(self, row: CaptionRow, reply: JudgeReply) -> tuple[float, dict]:
        found = accr_scores(reply.tokens)
        values = {name: expectation.value for name, expectation in found.items()}
        mean = sum(values.values()) / len(values)
        return mean, {
            "dimensions": values,
            "distributions": {name: {str(k): v for k, v in e.distribution.items()} for name, e in found.items()},
        }
