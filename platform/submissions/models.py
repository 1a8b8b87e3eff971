"""A captioner's upload for a dataset: the stored file, its method metadata and its lifecycle."""

from __future__ import annotations

from django.db import models
from django.db.models import JSONField, Value

from catalog.models import Dataset, System
from catalog.uploads.models import OwnedUpload
from scoring.models import EvaluationJob, EvaluationJobQuerySet


class Submission(OwnedUpload):
    """A captioner's owned upload (its owner, `is_public`, `status` and `visible_to`: OwnedUpload)."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done", "finished"
        FAILED = "failed"
        WITHDRAWN = OwnedUpload.WITHDRAWN

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="submissions")
    system = models.OneToOneField(System, on_delete=models.CASCADE, related_name="submission")
    method_name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    paper_url = models.URLField(blank=True)
    code_url = models.URLField(blank=True)
    metrics = models.JSONField(default=list, blank=True, help_text="metric slugs asked for; empty: every metric")
    file_name = models.CharField(max_length=300)
    file_format = models.CharField(max_length=10)
    file_sha256 = models.CharField(max_length=64)
    file_size = models.PositiveIntegerField()
    stored_file = models.CharField(max_length=300, help_text="the upload as received: its name in the file store")
    caption_count = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    is_baseline = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    # What the integrity checks found at upload (submissions.integrity: a flag warns, refuses nothing).
    # (a database default too: code of an older migration state inserts submissions without it)
    flags = models.JSONField(
        default=list,
        db_default=Value([], JSONField()),
        blank=True,
        help_text="integrity flags: {flag, share, threshold, …}",
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    dispatched_at = models.DateTimeField(null=True, blank=True, help_text="when planning reached the broker")
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The final status the owner was last told of by e-mail, and when (submissions.notifications):
    # claimed in one UPDATE, so an outcome is announced once however often it is reached.
    # (a database default too: code of an older migration state inserts submissions without it)
    notified_status = models.CharField(max_length=10, choices=Status.choices, blank=True, default="", db_default="")
    notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.method_name} on {self.dataset.slug}"

    @property
    def name(self) -> str:
        return self.method_name

    def jobs(self) -> EvaluationJobQuerySet:
        """The submission's scoring jobs: its system's (a job names only the system)."""
        return self.jobs_of(self.system_id)

    @staticmethod
    def jobs_of(system_id) -> EvaluationJobQuerySet:
        """The jobs of the submission whose system is `system_id`: an id, or `OuterRef("system_id")`
        in a query over submissions."""
        return EvaluationJob.objects.filter(system_id=system_id)
