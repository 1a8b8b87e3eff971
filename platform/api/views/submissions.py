"""Captioner submissions over the API: upload (multipart, token), progress and the results card."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from api import documentation as shapes
from api import serializers
from api.throttles import ApiRate, SubmissionRate
from submissions import selectors as submission_selectors
from submissions.cards import results_card
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create


class SubmissionViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Your submissions and public ones; POST (multipart, token) to submit a results file."""

    permission_classes = [permissions.IsAuthenticatedOrReadOnly]
    throttle_scope = "submissions"

    def get_serializer_class(self):
        return serializers.SubmissionCreateSerializer if self.action == "create" else serializers.SubmissionSerializer

    def get_queryset(self):
        return (
            Submission.objects.visible_to(self.request.user)
            .select_related("dataset", "system", "owner")
            .order_by("-id")
        )

    def get_throttles(self):
        """Every request counts against the API rate; an upload also against `submissions`."""
        return [ApiRate(), SubmissionRate()] if self.action == "create" else [ApiRate()]

    @extend_schema(
        summary="Submit a results file",
        description=(
            "A captioner's results (JSON list or JSON Lines of `image_id`, `caption`; or CSV), multipart with a "
            "token. 400 lists every problem with its file, line and field (nothing stored); 409: the same file "
            "was submitted before (its id and URLs); 429: the daily quota (`retry_at`) or the upload rate."
        ),
        request={"multipart/form-data": serializers.SubmissionCreateSerializer},
        responses={
            201: serializers.SubmissionSerializer,
            409: OpenApiResponse(shapes.DuplicateSubmission, description="this file was submitted before"),
        },
    )
    def create(self, request: Request, *args, **kwargs) -> Response:
        incoming = self.get_serializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        owner = request.user
        if not isinstance(owner, User):  # never: IsAuthenticatedOrReadOnly lets only a signed-in user post
            raise NotAuthenticated()
        submission = submission_create(
            owner=owner,
            dataset=data["dataset"],
            file_name=data["results"].name,
            content=data["results"],
            method=MethodInfo(data["method_name"], data["description"], data["paper_url"], data["code_url"]),
            metrics=data["metrics"],
            is_public=data["is_public"],
        )
        return Response(serializers.SubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)

    @extend_schema(summary="Scoring progress, per metric", responses=shapes.Progress)
    @action(detail=True)
    def progress(self, request: Request, pk: str) -> Response:
        return Response(
            submission_selectors.submission_progress(submission=self.get_object(), detail=request.user.is_staff)
        )

    @extend_schema(
        summary="The results card",
        description=(
            "Per metric its number (`points`: as the site shows it), 95% interval, rank among the public systems "
            "and the gap to the best and to each baseline; the metrics still being scored (`pending`) and those "
            "without a number (`missing`), in plain words."
        ),
        responses=shapes.Results,
    )
    @action(detail=True)
    def results(self, request: Request, pk: str) -> Response:
        submission = self.get_object()
        return Response(serializers.results_json(submission, results_card(submission=submission, viewer=request.user)))
