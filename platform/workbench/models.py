"""A metric researcher's submitted metric: scores uploaded per dataset instead of code.

The metric itself is a `scoring.Metric` (family "submitted", not in the code registry) and each
upload a `MetricVersion` whose `Score` rows are the uploaded numbers, so correlations, intervals,
significance clusters, the metric page and the API read it like any other metric. What the
submission adds is who owns it and whether the public may see it (an `OwnedUpload`, as a captioner's
submission is; the one visibility rule, `catalog.visibility.metric_q`), its links, and the datasets
its authors may have trained on."""

from __future__ import annotations

from django.db import models

from catalog.models import Dataset
from catalog.uploads.models import OwnedUpload
from scoring.models import Metric, MetricVersion

FAMILY = "submitted"


class MetricSubmission(OwnedUpload):
    class Status(models.TextChoices):
        ACTIVE = "active"
        WITHDRAWN = OwnedUpload.WITHDRAWN

    metric = models.OneToOneField(Metric, on_delete=models.CASCADE, related_name="submission")
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE, db_index=True)
    trained_on = models.ManyToManyField(
        Dataset, blank=True, related_name="+", help_text="datasets whose judgments the metric may have been fitted on"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.metric.name} by {self.owner}"

    @property
    def name(self) -> str:
        return self.metric.name


class MetricUpload(models.Model):
    """One upload of scores: a new version of the metric, with one file per dataset."""

    class Status(models.TextChoices):
        QUEUED = "queued"  # scores stored, correlations not computed yet
        DONE = "done", "finished"
        FAILED = "failed"

    submission = models.ForeignKey(MetricSubmission, on_delete=models.CASCADE, related_name="uploads")
    metric_version = models.OneToOneField(MetricVersion, on_delete=models.CASCADE, related_name="upload")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.metric_version}"


class UploadedFile(models.Model):
    """A dataset's scores in an upload: the file as received (in the store) and what it covered."""

    upload = models.ForeignKey(MetricUpload, on_delete=models.CASCADE, related_name="files")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="+")
    file_name = models.CharField(max_length=300)
    file_format = models.CharField(max_length=10)
    file_sha256 = models.CharField(max_length=64)
    stored_file = models.CharField(max_length=300)
    scored = models.PositiveIntegerField(help_text="candidates with a score")
    candidates = models.PositiveIntegerField(help_text="candidates the dataset asks to score")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["upload", "dataset"], name="uploaded_file_per_dataset")]
        ordering = ["dataset__title"]

    def __str__(self) -> str:
        return f"{self.file_name} for {self.dataset_id}"

    @property
    def coverage(self) -> float:
        return self.scored / self.candidates if self.candidates else 0.0

    @property
    def missing(self) -> int:
        return self.candidates - self.scored
