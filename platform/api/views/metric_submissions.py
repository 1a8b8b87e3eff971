"""Submitted metrics over the API: a researcher's scores uploaded, their visibility and withdrawal."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.exceptions import NotAuthenticated, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers
from api.throttles import SubmissionRate
from api.views.uploads import UploadActions
from catalog.models import Dataset
from workbench.models import MetricSubmission
from workbench.services import METRICS, MetricInfo, ScoresFile, metric_submit


class MetricSubmissionViewSet(UploadActions, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Submitted metrics: your own and public ones. POST (multipart, token) a metric's scores:
    `name`, `dataset` + `scores` (a JSONL or CSV file of `caption_id`, `score`), or one
    `scores_<dataset slug>` file per dataset; `lower_is_better`, `reference_free`, `is_public`,
    `trained_on` (dataset slugs). The same name again makes a new version. `visibility` and
    `withdraw` change it; the correlations are at `/api/v1/correlations/?metric=<slug>`."""

    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    kind = METRICS  # visibility, withdraw: UploadActions

    def get_serializer_class(self):
        if self.action == "create":
            return serializers.MetricUploadCreateSerializer
        return serializers.MetricSubmissionSerializer

    def get_queryset(self):
        return (
            MetricSubmission.objects.visible_to(self.request.user)
            .select_related("metric", "owner")
            .prefetch_related("trained_on", "uploads__metric_version__metric")
            .order_by("-id")
        )

    def get_throttles(self):
        """The API's rate and the changes' limit (UploadActions), the upload limit on create."""
        return [*super().get_throttles(), *([SubmissionRate()] if self.action == "create" else [])]

    def _owner(self, request: Request) -> User:
        if not isinstance(request.user, User):
            raise NotAuthenticated()
        return request.user

    @extend_schema(
        request={"multipart/form-data": serializers.MetricUploadCreateSerializer},
        responses={201: serializers.MetricSubmissionSerializer},
        description="Upload a metric's scores: `dataset` + `scores`, or a `scores_<dataset slug>` file per "
        "dataset (JSONL or CSV of caption_id, score; the ids of GET /api/v1/datasets/SLUG/candidates/). "
        "400 lists every problem with its file, line and field; nothing is stored then.",
    )
    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = self.get_serializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        owner = self._owner(request)
        visible = {dataset.slug: dataset for dataset in Dataset.objects.visible_to(owner)}
        files = [
            ScoresFile(visible[field.removeprefix("scores_")], upload.name, upload)
            for field, upload in request.FILES.items()
            if field.startswith("scores_") and field.removeprefix("scores_") in visible
        ]
        unknown = [f for f in request.FILES if f.startswith("scores_") and f.removeprefix("scores_") not in visible]
        if unknown:
            raise ValidationError({name: ["no such dataset"] for name in unknown})
        if data["scores"] is not None:
            if data["dataset"] is None:
                raise ValidationError({"dataset": ["which dataset the scores file is for"]})
            files.append(ScoresFile(data["dataset"], data["scores"].name, data["scores"]))
        if not files:
            raise ValidationError({"scores": ["no scores file: `dataset` and `scores`, or `scores_<dataset slug>`"]})
        wrong = [slug for slug in data["trained_on"] if slug not in visible]
        if wrong:
            raise ValidationError({"trained_on": [f"no such dataset: {', '.join(wrong)}"]})
        info = MetricInfo(
            data["name"],
            data["description"],
            data["paper_url"],
            data["code_url"],
            higher_is_better=not data["lower_is_better"],
            reference_free=data["reference_free"],
        )
        upload = metric_submit(
            owner=owner,
            info=info,
            files=files,
            is_public=data["is_public"],
            trained_on=[visible[slug] for slug in data["trained_on"]] or None,
        )
        submission = self.get_queryset().get(pk=upload.submission_id)
        return Response(serializers.MetricSubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)
