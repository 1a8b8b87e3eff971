"""Dry runs: what scoring a dataset with the language-model judges would send and cost, before a
job is planned. Nothing is sent and nothing is stored."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Avg, Count, FloatField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast

from catalog.models import Caption, Dataset
from evaluation import metrics as registry
from evaluation.metrics import MetricUnavailable
from evaluation.metrics.judges.estimate import Estimate
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
    rows = [job_row.row for job_row in caption_rows(captions)]
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
