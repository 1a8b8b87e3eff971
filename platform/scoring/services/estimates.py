"""Dry runs: what scoring a dataset with the language-model judges would send and cost, before a
job is planned. Nothing is sent and nothing is stored."""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from pathlib import Path

from django.db.models import Avg, Count, FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from PIL import Image

from capbench_eval import metrics as registry
from capbench_eval.metrics import CaptionRow, MetricUnavailable
from capbench_eval.metrics.judges.backends import OpenAICompatible, ReplyCache
from capbench_eval.metrics.judges.base import JudgeMetric
from capbench_eval.metrics.judges.estimate import Estimate, Price, price_of
from catalog.models import Caption, Dataset
from scoring.models import Score
from scoring.services.metrics import metric_versions_current
from scoring.services.rows import caption_rows


@dataclass(frozen=True)
class NotEstimated:
    metric: str
    reason: str


def dataset_estimate(*, dataset: Dataset, slugs: list[str] | None = None) -> list[Estimate | NotEstimated]:
    """One estimate per judge metric asked for (every judge by default) over the dataset's own
    candidate captions, the rows `dataset_plan` would score. Other metrics run on our machines and
    are listed as not estimated, with why."""
    versions = metric_versions_current(slugs)
    captions = list(Caption.objects.own().filter(item__dataset=dataset).order_by("id").values_list("id", flat=True))
    rows = [job_row.row for job_row in caption_rows(captions, by_url=False)]
    out: list[Estimate | NotEstimated] = []
    for version in versions:
        slug = version.metric.slug
        metric = registry.get(slug)
        if not hasattr(metric, "estimate"):
            if slugs:
                out.append(NotEstimated(slug, "not a language-model judge: it sends no tokens anywhere"))
            continue
        try:
            out.append(metric.estimate(rows, observed_completion=completion_observed(slug)))
        except MetricUnavailable as error:
            out.append(NotEstimated(slug, f"unavailable here: {error}"))
    return out


def completion_observed(slug: str) -> tuple[float, int] | None:
    """Mean completion tokens per reply over this metric's earlier scores (any version), and how
    many scores that mean is taken over."""
    found = (
        Score.objects.filter(metric_version__metric__slug=slug, detail__draws__gt=0)
        .annotate(
            per_reply=Cast(KT("detail__completion_tokens"), FloatField()) / Cast(KT("detail__draws"), FloatField())
        )
        .aggregate(mean=Avg("per_reply"), n=Count("id"))
    )
    return (found["mean"], found["n"]) if found["n"] else None


# What a cost per 1,000 captions is counted on when no dataset is named: a caption of typical length
# (COCO's average is about ten words), COCO's five references and a picture of COCO's usual size.
TYPICAL_CAPTION = "A man in a red jacket rides his bicycle down a busy city street."
TYPICAL_REFERENCES = (
    "A man riding a bike on a city street.",
    "A cyclist in a red coat rides past parked cars.",
    "A person on a bicycle in traffic on a busy road.",
    "A man is riding his bicycle down the street next to cars.",
    "A bicyclist wearing a red jacket travels along a downtown street.",
)
TYPICAL_PICTURE = (640, 480)


@dataclass(frozen=True)
class TypicalCost:
    metric: str
    model: str  # the judge model the price is of
    usd: float  # per 1,000 captions
    prompt_tokens: int  # per caption
    completion_tokens: int  # per caption, of the reply length assumed before any reply is seen


def cost_per_thousand(slug: str) -> TypicalCost | None:
    """What 1,000 typical captions (each with its own picture and five references) would cost a
    judge that asks a priced endpoint, counted by the estimator itself (`JudgeMetric.estimate`, with
    the metric's assumed reply length); None for a metric that sends nothing anywhere, a judge on a
    local model (one that needs no "api"), a model whose price is not known, or a judge that cannot
    judge such a caption (a video judge). Needs no dataset, reads no score, sends nothing; kept per
    process (per metric, model and price)."""
    try:
        metric = registry.get(slug)
    except registry.UnknownMetric:
        return None
    # A judge on a local model (FLEUR, VisCE² by default) is not asked for its backend: building one
    # loads torch, which a web process never needs; it has no price per token anyway.
    if not isinstance(metric, JudgeMetric) or "api" not in metric.needs:
        return None
    backend = metric.backend()
    if not isinstance(backend, OpenAICompatible):
        return None
    try:
        price = price_of(backend.model)
    except ValueError:  # a price set to something that is not a number: no estimate, not an error page
        return None
    return _typical_cost(slug, backend.model, price) if price is not None else None


@functools.lru_cache(maxsize=128)
def _typical_cost(slug: str, model: str, price: Price) -> TypicalCost | None:
    metric = registry.get(slug)
    if not isinstance(metric, JudgeMetric):  # cost_per_thousand asked for a judge
        return None
    with tempfile.TemporaryDirectory(prefix="capbench-typical-") as folder:
        picture = Path(folder) / "picture.jpg"
        Image.new("RGB", TYPICAL_PICTURE, (128, 128, 128)).save(picture, "JPEG")
        row = CaptionRow("typical", TYPICAL_CAPTION, TYPICAL_REFERENCES, str(picture))
        try:  # an empty reply cache: every request counted as sent
            estimate = metric.estimate([row], cache=ReplyCache(Path(folder) / "replies"))
        except MetricUnavailable:
            return None
    if estimate.unjudgeable or estimate.cost_usd is None:
        return None
    return TypicalCost(slug, model, estimate.cost_usd * 1000, estimate.prompt_tokens, estimate.completion_tokens)
