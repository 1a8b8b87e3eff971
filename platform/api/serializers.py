"""What the API returns and accepts."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalog.citations import dataset_bibtex
from catalog.models import Dataset, Item, System
from leaderboards.citations import metric_bibtex
from leaderboards.exports import CORRELATION_POINTS
from scoring.models import CorrelationResult, Metric, Score
from scoring.selectors import CaptionScores
from scoring.shown import Shown
from scoring.signatures import version_signature
from submissions.cards import Gap, PendingLine, ResultsCard
from submissions.models import Submission
from submissions.services import NAME_MAX_CHARS, URL_MAX_CHARS
from workbench.models import MetricSubmission, MetricUpload
from workbench.services import NAME_MAX


@extend_schema_field({"oneOf": [{"type": "string", "format": "uri"}, {"type": "string", "maxLength": 0}]})
class LinkField(serializers.CharField):
    """A stored link: a URL, or empty where none was given."""

    def __init__(self, **kwargs):
        super().__init__(read_only=True, **kwargs)


class DatasetSerializer(serializers.ModelSerializer):
    url = LinkField()
    bibtex = serializers.SerializerMethodField(help_text="the dataset's citation as BibTeX (its .bib download's text)")

    class Meta:
        model = Dataset
        fields = [
            "slug",
            "title",
            "description",
            "modality",
            "kind",
            "dimensions",
            "rating_scale",
            "citation",
            "licence",
            "url",
            "protocol_version",
            "protocol_notes",
            "references_hidden",
            "bibtex",
        ]

    @extend_schema_field(OpenApiTypes.STR)
    def get_bibtex(self, dataset: Dataset) -> str:
        return dataset_bibtex(dataset)


class ItemSerializer(serializers.ModelSerializer):
    references = serializers.SerializerMethodField(
        help_text="the reference captions; null on a hidden test set (`references_hidden`) for all but staff"
    )
    media_available = serializers.SerializerMethodField()

    class Meta:
        model = Item
        fields = ["external_id", "references", "media_available"]

    def get_references(self, item: Item) -> list[str] | None:
        return list(item.references) if self.context.get("references_shown") is True else None  # fails closed

    def get_media_available(self, item: Item) -> bool:
        return item.media is not None and bool(item.media.stored_path)


class SystemSerializer(serializers.ModelSerializer):
    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = System
        fields = ["id", "slug", "name", "kind", "dataset", "is_baseline", "description"]


class StaffOnlyErrors(serializers.Serializer):
    """A field holding the server's own words (paths of the model store, settings, commands): staff
    read it; anyone else reads `plain_error` in its place. `error_field` names it: a submission's
    error (its jobs' errors joined), a metric's unavailable reason. (A score's own error says what
    the metric made of that caption, e.g. a judge's unparseable reply: shown to all.)"""

    error_field = "error"
    plain_error = "could not be scored"

    def to_representation(self, instance):
        data = super().to_representation(instance)
        request = self.context.get("request")
        if data.get(self.error_field) and not (request is not None and request.user.is_staff):
            data[self.error_field] = self.plain_error
        return data


class MetricSerializer(StaffOnlyErrors, serializers.ModelSerializer):
    error_field = "unavailable_reason"
    plain_error = "not available on this server yet (a model or service it needs is not installed)"

    version = serializers.CharField(source="current_version.version", default=None)
    config_hash = serializers.CharField(source="current_version.config_hash", default=None)
    config = serializers.JSONField(source="current_version.config", default=None)

    class Meta:
        model = Metric
        fields = [
            "slug",
            "name",
            "family",
            "higher_is_better",
            "points",
            "aggregation",
            "needs",
            "queue",
            "version",
            "config_hash",
            "config",
            "signature",
            "available",
            "unavailable_reason",
            "citation",
            "description",
            "notes",
            "submitted",
            "bibtex",
        ]

    submitted = serializers.SerializerMethodField(help_text="for a submitted metric: owner, links, visibility")
    bibtex = serializers.SerializerMethodField(help_text="the metric's citation as BibTeX (its .bib download's text)")
    signature = serializers.SerializerMethodField(
        help_text="the current version's readable signature (docs/library.md, Signatures); null before it has one"
    )

    @extend_schema_field(OpenApiTypes.STR)
    def get_bibtex(self, metric: Metric) -> str:
        return metric_bibtex(metric)

    @extend_schema_field({"type": "string", "nullable": True})
    def get_signature(self, metric: Metric) -> str | None:
        version = metric.current_version
        if version is None:
            return None
        version.metric = metric  # (the same row: no query of its own)
        return version_signature(version)

    def get_submitted(self, metric: Metric) -> dict | None:
        submission = getattr(metric, "submission", None)
        if submission is None:
            return None
        return {
            "id": submission.pk,
            "owner": submission.owner.username,
            "paper_url": submission.paper_url,
            "code_url": submission.code_url,
            "is_public": submission.is_public,
            "status": submission.status,
        }


class ScoreSerializer(serializers.ModelSerializer):
    """Declared field by field for the schema; written by hand (`to_representation`): a page is up
    to 5,000 rows, and DRF's per-field machinery was most of a page's time (docs/performance.md)."""

    # The columns a page reads (QuerySet.only): not the items' references nor the metrics' texts.
    READS = (
        "id", "caption_id", "value", "error", "detail", "caption__text", "caption__item__external_id",
        "caption__system__slug", "metric_version__config_hash", "metric_version__metric__slug",
        "metric_version__metric__points",
        # what the version's signature reads (scoring.signatures.version_signature)
        "metric_version__version", "metric_version__config", "metric_version__library_version",
        "metric_version__metric__needs", "metric_version__metric__aggregation",
        "metric_version__metric__corpus_dependent", "metric_version__metric__is_registered",
    )  # fmt: skip

    caption_id = serializers.IntegerField()
    item = serializers.CharField(source="caption.item.external_id")
    system = serializers.CharField(source="caption.system.slug")
    caption = serializers.CharField(source="caption.text")
    metric = serializers.CharField(source="metric_version.metric.slug")
    metric_version = serializers.CharField(source="metric_version.config_hash")
    points = serializers.FloatField(allow_null=True, help_text="the value in the metric's points, as pages show it")
    signature = serializers.CharField(help_text="the metric version's readable signature (docs/library.md, Signatures)")

    class Meta:
        model = Score
        fields = [
            "id",
            "caption_id",
            "item",
            "system",
            "caption",
            "metric",
            "metric_version",
            "value",
            "points",
            "signature",
            "error",
            "detail",
        ]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.signatures: dict[int, str] = {}

    def to_representation(self, instance: Score) -> dict:
        caption, version = instance.caption, instance.metric_version
        if version.pk not in self.signatures:  # once per version: a page holds a few
            self.signatures[version.pk] = version_signature(version)
        return {
            "id": instance.pk,
            "caption_id": instance.caption_id,
            "item": caption.item.external_id,
            "system": caption.system.slug,
            "caption": caption.text,
            "metric": version.metric.slug,
            "metric_version": version.config_hash,
            "value": instance.value,
            "points": Shown(instance.value, scale=version.metric.points).points,
            "signature": self.signatures[version.pk],
            "error": instance.error,
            "detail": instance.detail,
        }


def caption_scores_json(row: CaptionScores) -> dict:
    """A caption's row of the per-caption scores' `layout=wide`: its scores keyed by metric slug,
    each `value` (the metric's scale), `points` (as pages show it) and `error`."""
    return {
        "caption_id": row.caption_id,
        "item": row.item,
        "system": row.system,
        "caption": row.caption,
        "scores": {
            slug: {"value": number["value"], "points": number["points"], "error": score.error}
            for slug, score in row.scores.items()
            for number in [score.shown.json()]
        },
    }


NULLABLE_FLOAT = {"type": "number", "format": "float", "nullable": True}


class CorrelationSerializer(serializers.ModelSerializer):
    """A correlation cell: `value`, `low`, `high` as computed (−1 to 1, accuracy 0 to 1) and the
    same ×100 as the metric board shows them (`points`, `low_points`, `high_points`)."""

    dataset = serializers.CharField(source="dataset.slug")
    metric = serializers.CharField(source="metric_version.metric.slug")
    metric_version = serializers.CharField(source="metric_version.config_hash")
    signature = serializers.SerializerMethodField(help_text="the metric version's readable signature")
    points = serializers.SerializerMethodField()
    low_points = serializers.SerializerMethodField()
    high_points = serializers.SerializerMethodField()

    class Meta:
        model = CorrelationResult
        fields = [
            "metric",
            "metric_version",
            "signature",
            "dataset",
            "dimension",
            "statistic",
            "level",
            "protocol",
            "value",
            "low",
            "high",
            "points",
            "low_points",
            "high_points",
            "n",
            "left_out",
            "tie_rate",
            "computed_at",
        ]

    def _shown(self, result: CorrelationResult) -> Shown:
        return Shown(result.value, result.low, result.high, CORRELATION_POINTS)

    @extend_schema_field(OpenApiTypes.STR)
    def get_signature(self, result: CorrelationResult) -> str:
        return version_signature(result.metric_version)

    @extend_schema_field(NULLABLE_FLOAT)
    def get_points(self, result: CorrelationResult) -> float | None:
        return self._shown(result).points

    @extend_schema_field(NULLABLE_FLOAT)
    def get_low_points(self, result: CorrelationResult) -> float | None:
        return self._shown(result).low_points

    @extend_schema_field(NULLABLE_FLOAT)
    def get_high_points(self, result: CorrelationResult) -> float | None:
        return self._shown(result).high_points


class SubmissionSerializer(StaffOnlyErrors, serializers.ModelSerializer):
    plain_error = "one or more metrics could not be scored (each metric's state is in its progress)"

    dataset: serializers.SlugRelatedField[Dataset] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    system = serializers.CharField(source="system.slug", read_only=True)
    owner = serializers.CharField(source="owner.username", read_only=True)
    paper_url = LinkField()
    code_url = LinkField()

    class Meta:
        model = Submission
        fields = [
            "id",
            "dataset",
            "system",
            "owner",
            "method_name",
            "description",
            "paper_url",
            "code_url",
            "metrics",
            "file_name",
            "file_format",
            "caption_count",
            "status",
            "is_public",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class SubmissionCreateSerializer(serializers.Serializer):
    dataset = serializers.SlugRelatedField(slug_field="slug", queryset=Dataset.objects.visible_to(None))
    results = serializers.FileField()
    method_name = serializers.CharField(max_length=NAME_MAX_CHARS)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=settings.CAPBENCH_DESCRIPTION_MAX_CHARS
    )
    paper_url = serializers.URLField(required=False, allow_blank=True, default="", max_length=URL_MAX_CHARS)
    code_url = serializers.URLField(required=False, allow_blank=True, default="", max_length=URL_MAX_CHARS)
    metrics = serializers.ListField(
        child=serializers.SlugField(max_length=60), required=False, default=list, max_length=100
    )
    is_public = serializers.BooleanField(required=False, default=False)


class DatasetNamesSerializer(serializers.Serializer):
    """The optional slug and title staff give with a dataset upload (else the file's own), checked
    before the import: a slug the URLs can route, lengths the columns hold, no NUL."""

    slug = serializers.SlugField(
        max_length=Dataset._meta.get_field("slug").max_length, required=False, allow_blank=True
    )
    title = serializers.CharField(
        max_length=Dataset._meta.get_field("title").max_length, required=False, allow_blank=True
    )


class MetricUploadCreateSerializer(serializers.Serializer):
    """A metric's scores: `dataset` + `scores` (one file), or one `scores_<dataset slug>` file per dataset."""

    name = serializers.CharField(max_length=NAME_MAX)
    description = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=settings.CAPBENCH_DESCRIPTION_MAX_CHARS
    )
    paper_url = serializers.URLField(required=False, allow_blank=True, default="", max_length=URL_MAX_CHARS)
    code_url = serializers.URLField(required=False, allow_blank=True, default="", max_length=URL_MAX_CHARS)
    lower_is_better = serializers.BooleanField(required=False, default=False)
    reference_free = serializers.BooleanField(required=False, default=False)
    is_public = serializers.BooleanField(required=False, default=False)
    dataset = serializers.SlugRelatedField(
        slug_field="slug", queryset=Dataset.objects.visible_to(None), required=False, allow_null=True, default=None
    )
    scores = serializers.FileField(required=False, allow_null=True, default=None)
    trained_on = serializers.ListField(
        child=serializers.SlugField(max_length=100), required=False, default=list, max_length=100
    )


class MetricUploadSerializer(serializers.ModelSerializer):
    metric = serializers.CharField(source="metric_version.metric.slug")
    version = serializers.CharField(source="metric_version.version")
    signature = serializers.SerializerMethodField(help_text="the uploaded version's readable signature")
    datasets = serializers.SerializerMethodField()

    class Meta:
        model = MetricUpload
        fields = ["id", "metric", "version", "signature", "status", "created_at", "finished_at", "datasets"]

    def get_signature(self, upload: MetricUpload) -> str:
        return version_signature(upload.metric_version)

    def get_datasets(self, upload: MetricUpload) -> list[dict]:
        return [
            {"dataset": f.dataset.slug, "scored": f.scored, "candidates": f.candidates, "missing": f.missing}
            for f in upload.files.select_related("dataset")
        ]


class MetricSubmissionSerializer(serializers.ModelSerializer):
    metric = serializers.CharField(source="metric.slug")
    name = serializers.CharField(source="metric.name")
    owner = serializers.CharField(source="owner.username")
    uploads = MetricUploadSerializer(many=True, read_only=True)
    trained_on = serializers.SerializerMethodField()
    paper_url = LinkField()
    code_url = LinkField()

    class Meta:
        model = MetricSubmission
        fields = [
            "id",
            "metric",
            "name",
            "owner",
            "paper_url",
            "code_url",
            "is_public",
            "status",
            "trained_on",
            "uploads",
            "created_at",
        ]

    def get_trained_on(self, submission: MetricSubmission) -> list[str]:
        return sorted(dataset.slug for dataset in submission.trained_on.all())


def results_json(submission: Submission, card: ResultsCard) -> dict:
    """A submission's results card (submissions.cards) as the API gives it (docs/api.md "Numbers"):
    every number native (`value`, `low`, `high`) and in points (`points`, `low_points`,
    `high_points`), a gap as `gap` and `gap_points`."""

    def gap(found: Gap | None) -> dict | None:
        if found is None:
            return None
        return {
            "system": found.slug,
            "name": found.name,
            **found.number.json(),
            "gap": found.gap.value,
            "gap_points": found.gap.points,
        }

    def pending(line: PendingLine) -> dict:
        metric = line.metric
        return {"metric": metric.slug, "name": metric.name, "status": line.status, "words": line.words,
                "done": line.done, "total": line.total}  # fmt: skip

    return {
        "submission": submission.pk,
        "status": submission.status,
        "final": submission.status not in Submission.ACTIVE,
        "dataset": submission.dataset.slug,
        "system": submission.system.slug,
        "public_systems": card.public_systems,
        "results": [
            {
                "metric": line.metric.slug,
                "name": line.metric.name,
                "aggregation": line.metric.aggregation,
                **line.number.json(),
                "higher_is_better": line.metric.higher_is_better,
                "rank": line.rank,
                "ranked": line.ranked,
                "tied": line.tied,
                "best": gap(line.best),
                "baselines": [gap(baseline) for baseline in line.baselines],
            }
            for line in card.lines
        ],
        "pending": [pending(line) for line in card.pending],
        "missing": [pending(line) for line in card.missing],
        "flags": [flag.json() for flag in card.flags],
    }
