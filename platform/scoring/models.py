"""Metrics as the platform knows them, per-caption scores, evaluation jobs and their batches,
per-system corpus numbers and the meta-evaluation's correlation results."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.postgres.indexes import HashIndex
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KT

from catalog.models import Caption, Dataset, System, blinded_system_ids
from catalog.visibility import metric_q, own_q, score_q


def protocol_parts(key: str) -> tuple[str, str]:
    """`"<dataset>/<name>@<version>"` (a Protocol's key) -> (name, version); ("", "") when not that shape."""
    head, at, version = key.partition("@")
    _, slash, name = head.rpartition("/")
    return (name, version) if at and slash else ("", "")


class ProtocolColumns(models.Model):
    """A row stored under a protocol keeps its key (`protocol`) and, as the columns queries filter
    on, its name ("paper", "canonical") and version; saving fills the two from the key when not given.
    Each subclass declares the three fields (their help texts differ)."""

    protocol: str
    protocol_name: str
    protocol_version: str

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        name, version = protocol_parts(self.protocol)
        if name:  # the key decides; a key of another shape keeps the columns as given
            self.protocol_name, self.protocol_version = name, version
        super().save(*args, **kwargs)


class MetricQuerySet(models.QuerySet["Metric"]):
    def visible_to(self, viewer) -> MetricQuerySet:
        """Built-in metrics and the submitted ones the viewer may see (catalog.visibility.metric_q)."""
        return self.filter(metric_q(viewer))

    def listed(self) -> MetricQuerySet:
        """What the boards list: the registry's metrics and the submitted ones (before visibility)."""
        return self.filter(models.Q(is_registered=True) | models.Q(submission__isnull=False))


class Metric(models.Model):
    """A metric of the `evaluation` registry, synced by `metrics_sync`, or a metric whose scores a
    researcher uploaded (family "submitted", `is_registered` false, its `submission` in workbench)."""

    slug = models.SlugField(max_length=60, unique=True)
    name = models.CharField(max_length=100)
    family = models.CharField(max_length=40)
    higher_is_better = models.BooleanField(default=True)
    needs = models.JSONField(default=list, help_text="references / media / gpu / api")
    queue = models.CharField(max_length=10, default="cpu")
    corpus_dependent = models.BooleanField(default=False)
    points = models.FloatField(
        default=100.0, db_default=100.0, help_text="what a number is multiplied by where people read it"
    )
    aggregation = models.CharField(
        max_length=10,
        choices=[("mean", "mean of the per-caption scores"), ("corpus", "corpus statistic of summed statistics")],
        default="mean",
        db_default="mean",
        help_text="how a system's number is formed from its captions' scores (evaluation Metric.aggregation)",
    )
    citation = models.TextField(blank=True)
    description = models.TextField(blank=True)
    notes = models.JSONField(default=list, blank=True, help_text="implementation choices, shown on the metric page")
    current_version = models.ForeignKey(
        "MetricVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="what the registry computes now",
    )
    is_registered = models.BooleanField(default=True, help_text="false once the code no longer has it")
    available = models.BooleanField(default=True)
    unavailable_reason = models.TextField(blank=True)
    synced_at = models.DateTimeField(auto_now=True)

    objects = MetricQuerySet.as_manager()

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class MetricVersion(models.Model):
    """A metric's code version and configuration: scores belong to one, never to the bare metric."""

    metric = models.ForeignKey(Metric, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=40)
    config_hash = models.CharField(max_length=16)
    config = models.JSONField(default=dict)
    library_version = models.CharField(
        max_length=40,
        blank=True,
        default="",
        db_default="",
        help_text="the capbench-eval release that computed its scores (capbench_eval.version.VERSION); "
        "empty for uploaded scores, which no library computed",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["metric", "config_hash"], name="metric_version_unique")]
        ordering = ["metric", "created_at"]

    def __str__(self) -> str:
        return f"{self.metric.slug}@{self.version}/{self.config_hash}"


class EvaluationJobQuerySet(models.QuerySet["EvaluationJob"]):
    def open(self) -> EvaluationJobQuerySet:
        """Jobs not over yet: queued or running (EvaluationJob.OPEN)."""
        return self.filter(status__in=EvaluationJob.OPEN)


class EvaluationJob(models.Model):
    """One metric version over one caption set: a submission's system, or every candidate caption
    of a dataset (for the meta-evaluation boards). A job names only the system; the submission that
    brought it, if any, is `system.submission`, the layer above's to read."""

    class Purpose(models.TextChoices):
        SUBMISSION = "submission"
        DATASET = "dataset"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        UNAVAILABLE = "unavailable"

    OPEN = (Status.QUEUED, Status.RUNNING)  # "open job": written once, here (objects.open())
    FINAL = (Status.DONE, Status.FAILED, Status.UNAVAILABLE)

    purpose = models.CharField(max_length=12, choices=Purpose.choices)
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="evaluation_jobs")
    system = models.ForeignKey(
        System,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="evaluation_jobs",
        help_text="empty: every candidate caption of the dataset",
    )
    metric_version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="jobs")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0, help_text="captions with a stored score or failure")
    failed = models.PositiveIntegerField(default=0, help_text="captions the metric could not score")
    reused = models.PositiveIntegerField(default=0, help_text="scores taken from identical earlier work")
    batch_count = models.PositiveIntegerField(default=0)
    context_key = models.CharField(max_length=64, blank=True, help_text="corpus context (corpus-dependent metrics)")
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    compute_seconds = models.FloatField(default=0.0, help_text="time inside the metric, summed over batches")

    objects = EvaluationJobQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "system", "metric_version"], nulls_distinct=False, name="job_unique_per_caption_set"
            )
        ]
        ordering = ["-queued_at", "id"]

    def __str__(self) -> str:
        return f"job {self.pk}: {self.metric_version} on {self.system or self.dataset}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL


class JobBatch(models.Model):
    """A slice of a job's captions: the unit a worker takes, retries and records atomically."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    job = models.ForeignKey(EvaluationJob, on_delete=models.CASCADE, related_name="batches")
    index = models.PositiveIntegerField()
    caption_ids = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    failed = models.PositiveIntegerField(default=0)
    reused = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "index"], name="batch_unique_index")]
        ordering = ["job", "index"]

    def __str__(self) -> str:
        return f"batch {self.pk} of job {self.job_id} ({self.status})"

    @property
    def holder(self) -> str:
        """The Celery hostname ("name@host") of the delivery holding it ("name@host/task-id")."""
        return self.worker.split("/", 1)[0]


class ScoreQuerySet(models.QuerySet["Score"]):
    def visible_to(self, viewer) -> ScoreQuerySet:
        """Scores of the captions `viewer` may read one by one (an open campaign's are blind), less a
        hidden test set's reference-based ones (catalog.visibility.score_q)."""
        return self.filter(score_q(viewer, blinded=blinded_system_ids(viewer)))

    def naming_picture(self, key: str) -> ScoreQuerySet:
        """Scores whose detail names this generated picture; found through score_generated_image
        (the condition and the expression are the index's own, so the planner can use it)."""
        return (
            self.filter(detail__has_key="generated_image")
            .alias(generated_image=KT("detail__generated_image"))
            .filter(generated_image=key)
        )

    def own(self) -> ScoreQuerySet:
        """Scores of the dataset's own captions (catalog.visibility.own_q), not submitted ones."""
        return self.filter(own_q(to_system="caption__system__"))


class CompactJSONField(models.TextField):
    """JSON kept as compact text rather than jsonb, for values that are only ever read back whole
    (never filtered on inside the database): a BLEU row's ten counts take 27 bytes this way and
    128 as jsonb, which on ten million score rows is the difference docs/performance.md measures."""

    description = "JSON as compact text"
    # What django-stubs reads a field's Python type from: any JSON value, not the text column's str.
    _pyi_private_set_type: Any
    _pyi_private_get_type: Any

    def from_db_value(self, value, expression, connection):
        return None if value is None else json.loads(value)

    def to_python(self, value):
        if not isinstance(value, str):
            return value
        if not value.strip():
            return None
        try:
            return json.loads(value)
        except ValueError as error:
            raise ValidationError(f"not JSON: {error}", code="invalid") from None

    def formfield(self, **kwargs):
        # JSON in and out (the admin): not TextField's plain text of the Python value.
        return forms.JSONField(**{"required": not self.blank, **kwargs})

    def get_prep_value(self, value):
        return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)

    def value_to_string(self, obj) -> str:
        return self.get_prep_value(self.value_from_object(obj)) or ""


INPUT_KEY_BYTES = 16  # the first 128 bits of the SHA-256 (scoring.services.rows.input_key)


class Score(models.Model):
    """A caption's value under one metric version. `value` is null when the metric failed on it
    (`error` says why); `statistics` are what corpus aggregation needs (BLEU counts).

    The table every other grows with (docs/performance.md): its indexes are the primary key; the
    unique (caption, metric version) pair, which serves every lookup by caption and by version; the
    reuse key; and, for the few rows that name a generated picture, that picture's key."""

    # No index of its own on caption: score_unique starts with it.
    caption = models.ForeignKey(Caption, on_delete=models.CASCADE, related_name="scores", db_index=False)
    # No index of its own either: every read of a version's scores reaches them through their
    # captions (score_unique); only deleting a version, which no request does, reads the table.
    metric_version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="scores", db_index=False)
    value = models.FloatField(null=True, blank=True)
    detail = models.JSONField(null=True, blank=True)
    statistics = CompactJSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    # Null where no metric computed the score (a researcher's uploaded scores): nothing to reuse, and
    # no entry in the hash index, where one shared value would pile every such row into one bucket.
    input_key = models.BinaryField(
        max_length=INPUT_KEY_BYTES,
        null=True,
        blank=True,
        help_text="first 16 bytes of the SHA-256 of (metric config, candidate, references, media, corpus context)",
    )
    computed_at = models.DateTimeField(auto_now=True)

    objects = ScoreQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["caption", "metric_version"], name="score_unique")]
        indexes = [
            # A hash index: the reuse lookup is equality only, and random keys would leave a B-tree's
            # pages two-thirds full at three times a hash entry's size.
            HashIndex(fields=["input_key"], name="score_reuse"),
            models.Index(
                KT("detail__generated_image"),
                name="score_generated_image",
                condition=Q(detail__has_key="generated_image"),
            ),
        ]

    def __str__(self) -> str:
        return f"caption {self.caption_id} × metric version {self.metric_version_id}: {self.value}"


# How a system's number is formed (scoring.services.numbers) changed with each of these; a SystemScore
# of an older definition is computed again by the periodic sweep. 2: every metric's number with its
# interval, a corpus metric's resampled from its summed statistics (there was none before).
NUMBER_DEFINITION = 2


class SystemScore(models.Model):
    """A system's number under a metric version on its dataset, as every page, download and
    correlation reads it (scoring.services.numbers, docs/metrics.md "A system's number"): the mean of
    its per-caption scores or the metric's corpus statistic, on the metric's native scale, with the
    95% interval of its images resampled."""

    system = models.ForeignKey(System, on_delete=models.CASCADE, related_name="system_scores")
    metric_version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="system_scores")
    value = models.FloatField(null=True, blank=True)
    low = models.FloatField(null=True, blank=True, help_text="95% interval (images resampled)")
    high = models.FloatField(null=True, blank=True)
    count = models.PositiveIntegerField(default=0, help_text="captions with a score")
    images = models.PositiveIntegerField(default=0, db_default=0, help_text="images the number is over")
    failed = models.PositiveIntegerField(default=0)
    definition = models.PositiveSmallIntegerField(
        default=NUMBER_DEFINITION, db_default=0, help_text="NUMBER_DEFINITION it was computed under"
    )
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["system", "metric_version"], name="system_score_unique")]

    def __str__(self) -> str:
        return f"system {self.system_id} × metric version {self.metric_version_id}: {self.value}"


class CorpusContext(models.Model):
    """A corpus-dependent metric's context (CIDEr-D document frequencies) for one set of reference
    lists, built once and shared by every batch and every later submission on the same items."""

    key = models.CharField(max_length=64, unique=True)
    metric_version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="contexts")
    payload = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"context {self.key[:12]} of metric version {self.metric_version_id}"


class CorrelationResult(ProtocolColumns, models.Model):
    """Agreement of a metric version with people on one dataset under one protocol."""

    class Level(models.TextChoices):
        CAPTION = "caption"
        SYSTEM = "system"

    metric_version = models.ForeignKey(MetricVersion, on_delete=models.CASCADE, related_name="correlations")
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="correlations")
    dimension = models.CharField(max_length=40)
    statistic = models.CharField(max_length=40, help_text="tau_b, tau_c, pearson, accuracy …")
    level = models.CharField(max_length=10, choices=Level.choices, default=Level.CAPTION)
    protocol = models.CharField(max_length=80, help_text='e.g. "flickr8k-expert/paper@1"')
    protocol_name = models.CharField(max_length=40, blank=True, default="", help_text='"paper" or "canonical"')
    protocol_version = models.CharField(max_length=20, blank=True, default="")
    value = models.FloatField(null=True)
    low = models.FloatField(null=True)
    high = models.FloatField(null=True)
    n = models.PositiveIntegerField()
    left_out = models.PositiveIntegerField(default=0, help_text="rows without a metric score")
    tie_rate = models.FloatField(null=True, help_text="share of pairs the metric ties")
    detail = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["metric_version", "dataset", "dimension", "statistic", "level", "protocol"],
                name="correlation_unique",
            )
        ]
        indexes = [models.Index(fields=["protocol_name", "level"], name="correlation_protocol_level")]
        ordering = ["dataset", "dimension", "statistic"]

    def __str__(self) -> str:
        return f"{self.statistic} of metric version {self.metric_version_id} on {self.protocol} ({self.level})"


class CorrelationDraws(models.Model):
    """A correlation cell's bootstrap replicate values (float32): metrics scored on the same rows
    with the same seed have paired draws, which is what the significance test compares."""

    result = models.OneToOneField(CorrelationResult, on_delete=models.CASCADE, related_name="draws")
    values = models.BinaryField()

    def __str__(self) -> str:
        return f"draws of correlation {self.result_id}"


class SignificanceResult(ProtocolColumns, models.Model):
    """Which metrics are separable on one board column: metrics sorted best first, the one-sided
    p-value matrix of paired bootstrap draws, and the clusters (ranks) at alpha 0.05."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="significance")
    protocol = models.CharField(max_length=80)
    protocol_name = models.CharField(max_length=40, blank=True, default="", help_text='"paper" or "canonical"')
    protocol_version = models.CharField(max_length=20, blank=True, default="")
    level = models.CharField(
        max_length=10, choices=CorrelationResult.Level.choices, default=CorrelationResult.Level.CAPTION
    )
    dimension = models.CharField(max_length=40)
    statistic = models.CharField(max_length=40)
    metrics = models.JSONField(help_text="metric slugs, best first")
    values = models.JSONField()
    p_values = models.JSONField(help_text="p[i][j], i < j: the share of replicates where i does not beat j")
    ranks = models.JSONField()
    alpha = models.FloatField(default=0.05)
    # Null: the public board's clusters (the metrics everyone may see). A private submitted metric
    # gets its own rows: the public metrics and it, on the same draws, seen by whoever may see it.
    subject = models.ForeignKey(
        Metric, null=True, blank=True, on_delete=models.CASCADE, related_name="+", help_text="a private metric's own"
    )
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "protocol", "level", "dimension", "statistic", "subject"],
                name="significance_unique",
                nulls_distinct=False,
            )
        ]
        indexes = [models.Index(fields=["protocol_name", "level"], name="significance_protocol_level")]

    def __str__(self) -> str:
        return f"significance on {self.protocol} ({self.level})"


class ResultsRevision(models.Model):
    """One row counting the writes of correlation and significance results: every statement that
    inserts, updates or deletes some moves it, in its transaction, by a PostgreSQL trigger
    (migration scoring 0009), whoever writes (the services, the admin, a cascade, a bulk update).
    The metric board's table is kept under it (leaderboards.metric_board.metric_board_version): a
    database-side counter, so neither commit order nor the clocks of workers on other machines can
    hide a write."""

    number = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"results revision {self.number}"
