"""Reads of submitted metrics: the datasets they can be scored on, a viewer's own, and what the
metric page shows of one (owner, links, uploads, per-dataset coverage and integrity checks)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Exists, OuterRef, Q, QuerySet

from catalog.models import Dataset, Judgment, PairJudgment
from catalog.visibility import references_q
from scoring.models import CorrelationResult, Metric
from workbench.models import MetricSubmission, MetricUpload, UploadedFile

# A caption-level correlation with people this strong, on judgments anyone can download, more likely
# says the metric was fitted on them than that it reads captions that well.
SUSPICIOUS_TAU = 0.95


def scorable_datasets(viewer) -> list[Dataset]:
    """Datasets the viewer may see that have human judgments: what a metric can be compared on. Not
    a hidden test set's, unless staff: correlating made-up scores with its ratings, caption by
    caption, would read them back one at a time (catalog.visibility)."""
    judged = Exists(Judgment.objects.filter(caption__item__dataset=OuterRef("pk"))) | Exists(
        PairJudgment.objects.filter(dataset=OuterRef("pk"))
    )
    return list(Dataset.objects.visible_to(viewer).filter(references_q(viewer)).filter(judged).order_by("title"))


def metrics_of(*, owner) -> QuerySet[MetricSubmission]:
    return (
        MetricSubmission.objects.filter(owner=owner)
        .select_related("metric__current_version")
        .prefetch_related("uploads")
        .order_by("-created_at")
    )


@dataclass
class DatasetCheck:
    dataset: Dataset
    version: str
    scored: int
    candidates: int
    tie_rate: float | None = None
    strongest: float | None = None  # the largest |caption-level Kendall τ| over its dimensions
    trained_on: bool = False

    @property
    def coverage(self) -> float:
        return self.scored / self.candidates if self.candidates else 0.0

    @property
    def missing(self) -> int:
        return self.candidates - self.scored

    @property
    def suspicious(self) -> bool:
        return (
            self.strongest is not None
            and self.strongest > SUSPICIOUS_TAU
            and self.dataset.is_public
            and not self.dataset.references_hidden
        )


@dataclass
class SubmittedMetric:
    submission: MetricSubmission
    uploads: list[MetricUpload]
    checks: list[DatasetCheck] = field(default_factory=list)

    @property
    def correlating(self) -> bool:
        return any(upload.status == MetricUpload.Status.QUEUED for upload in self.uploads)


def submitted_metric(*, metric: Metric, viewer) -> SubmittedMetric | None:
    """What the metric page adds for a submitted metric (None for a built-in one): the newest upload
    per dataset's coverage, its ties rate and strongest τ, the datasets marked as trained on."""
    submission = (
        MetricSubmission.objects.filter(metric=metric).select_related("owner").prefetch_related("trained_on").first()
    )
    if submission is None:
        return None
    uploads = list(submission.uploads.select_related("metric_version").order_by("-created_at"))
    trained = {dataset.pk for dataset in submission.trained_on.all()}
    visible = Dataset.objects.visible_to(viewer)
    newest: dict[int, UploadedFile] = {}
    files = UploadedFile.objects.filter(upload__submission=submission, dataset__in=visible).select_related(
        "dataset", "upload__metric_version"
    )
    for uploaded in files.order_by("upload__created_at", "id"):
        newest[uploaded.dataset_id] = uploaded
    checks = []
    for uploaded in sorted(newest.values(), key=lambda u: u.dataset.title):
        results = CorrelationResult.objects.filter(
            metric_version=uploaded.upload.metric_version, dataset=uploaded.dataset, level="caption"
        )
        taus = [
            abs(v)
            for v in results.filter(Q(statistic="tau_b") | Q(statistic="tau_c")).values_list("value", flat=True)
            if v is not None
        ]
        ties = [t for t in results.values_list("tie_rate", flat=True) if t is not None]
        checks.append(
            DatasetCheck(
                uploaded.dataset,
                uploaded.upload.metric_version.version,
                uploaded.scored,
                uploaded.candidates,
                tie_rate=max(ties) if ties else None,
                strongest=max(taus) if taus else None,
                trained_on=uploaded.dataset_id in trained,
            )
        )
    return SubmittedMetric(submission, uploads, checks)


def private_metric_slugs(viewer) -> set[str]:
    """The submitted metrics this viewer may see that the public may not (their own unpublished or
    withdrawn ones; every such one for staff): what makes their metric board their own."""
    if viewer is None or not viewer.is_authenticated:
        return set()
    hidden = Metric.objects.filter(submission__isnull=False).exclude(
        pk__in=Metric.objects.visible_to(None).values("pk")
    )
    return set(hidden.filter(pk__in=Metric.objects.visible_to(viewer).values("pk")).values_list("slug", flat=True))
