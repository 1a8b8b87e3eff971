"""The catalogue over the API: datasets (staff upload canonical files), their items and candidates,
systems and metrics, each as far as the caller may see them (catalog.visibility)."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils.cache import patch_vary_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api import documentation as shapes
from api import serializers
from api.views.common import CsvRenderer, DownloadNegotiation, IsStaffOrReadOnly, JsonLinesRenderer
from catalog.importers.registry import read_upload
from catalog.models import Dataset, Item, System
from catalog.services.candidates import FORMATS as CANDIDATE_FORMATS
from catalog.services.imports import dataset_import
from catalog.services.reference_file import CONTENT_TYPE as REFERENCES_TYPE
from catalog.services.reference_file import reference_lines
from catalog.views import candidates_response
from catalog.visibility import references_visible
from scoring.models import Metric


class DatasetViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Public datasets; staff POST a canonical JSONL file (`file`, optional `slug`, `title`) to
    create or update one (the whole file is checked first; one transaction)."""

    serializer_class = serializers.DatasetSerializer
    lookup_field = "slug"
    permission_classes = [IsStaffOrReadOnly]

    def get_queryset(self):
        return Dataset.objects.visible_to(self.request.user).order_by("slug")

    @extend_schema(
        summary="Create or update a dataset (staff)",
        request={"multipart/form-data": shapes.DatasetUpload},
        responses={
            201: OpenApiResponse(shapes.DatasetImported, description="stored (created or changed)"),
            200: OpenApiResponse(shapes.DatasetImported, description="the same as stored: nothing written"),
        },
    )
    def create(self, request: Request, *args, **kwargs) -> Response:
        upload = request.data.get("file") if isinstance(request.data, dict) else None  # a JSON array has no file
        if upload is None or not hasattr(upload, "read"):
            raise ValidationError({"file": "a canonical JSONL file is required"})
        names = serializers.DatasetNamesSerializer(data=request.data)
        names.is_valid(raise_exception=True)
        outcome = dataset_import(
            bundle=read_upload(upload.name, upload.read()),
            source_path=f"api upload {upload.name}",
            slug=names.validated_data.get("slug") or None,
            title=names.validated_data.get("title") or None,
        )
        body = {
            **serializers.DatasetSerializer(outcome.dataset).data,
            "changed": outcome.changed,
            "counts": outcome.counts,
        }
        return Response(body, status=status.HTTP_201_CREATED if outcome.changed else status.HTTP_200_OK)

    @extend_schema(
        summary="A dataset's items",
        parameters=[
            shapes.query("limit", "items per page (at most 1000)", kind=int),
            shapes.query("offset", "", kind=int),
        ],
        responses=shapes.ItemPage,
    )
    @action(detail=True)
    def items(self, request: Request, slug: str) -> Response:
        dataset = self.get_object()
        shown = references_visible(dataset, request.user)
        items = Item.objects.filter(dataset=dataset).select_related("media").order_by("id")
        page = self.paginate_queryset(items if shown else items.defer("references"))
        context = {"references_shown": shown}
        return self.get_paginated_response(serializers.ItemSerializer(page, many=True, context=context).data)

    @extend_schema(
        summary="Candidates to score",
        description=(
            "A meta-evaluation dataset's judged captions, each with a stable `caption_id`, its references "
            "and image, streamed as JSON Lines (`caption_id`, `candidate`, `references`, `image`, `item`, "
            "`system`) or CSV (the same columns; `references` a JSON array in its cell). A hidden test set's "
            "rows carry empty references. A dataset without human judgments: 404."
        ),
        parameters=[
            OpenApiParameter("format", str, enum=list(CANDIDATE_FORMATS), description="jsonl (the default) or csv")
        ],
        responses={
            (200, JsonLinesRenderer.media_type): OpenApiTypes.STR,
            (200, CsvRenderer.media_type): OpenApiTypes.STR,
            404: OpenApiResponse(description="no such dataset, hidden, or not a meta-evaluation dataset"),
        },
    )
    @action(
        detail=True,
        renderer_classes=[JsonLinesRenderer, CsvRenderer],
        content_negotiation_class=DownloadNegotiation,
        pagination_class=None,
    )
    def candidates(self, request: Request, slug: str, format: str | None = None) -> StreamingHttpResponse:
        return candidates_response(self.get_object(), request.accepted_renderer.format)

    @extend_schema(
        summary="References for local scoring",
        description=(
            "Every item of the dataset, one JSON object a line, in the dataset's order (the items' "
            "primary-key order, in which a board's bootstrap draws images): `item` (the id a results file "
            "names the image by), `image` (its file name, or null), `position` (0, 1, …: pass it to "
            "`capbench_eval.score(..., images=)` for the board's interval) and `references` (its reference "
            "captions). On a hidden test set `references` is null for all but staff. `capbench references` "
            "and `capbench eval` read it (docs/client.md)."
        ),
        parameters=[OpenApiParameter("format", str, enum=["jsonl"], description="jsonl (the only one)")],
        responses={
            (200, JsonLinesRenderer.media_type): OpenApiTypes.STR,
            404: OpenApiResponse(description="no such dataset, or hidden"),
        },
    )
    @action(
        detail=True,
        renderer_classes=[JsonLinesRenderer],
        content_negotiation_class=DownloadNegotiation,
        pagination_class=None,
    )
    def references(self, request: Request, slug: str, format: str | None = None) -> StreamingHttpResponse:
        dataset = self.get_object()
        shown = references_visible(dataset, request.user)
        response = StreamingHttpResponse(reference_lines(dataset, shown=shown), content_type=REFERENCES_TYPE)
        response["Content-Disposition"] = f'attachment; filename="{dataset.slug}-references.jsonl"'
        patch_vary_headers(response, ["Cookie", "Authorization"])  # staff read a hidden set's references
        return response


class SystemViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = serializers.SystemSerializer
    filterset_fields = {"dataset__slug": ["exact"], "kind": ["exact"]}

    def get_queryset(self):
        return (
            System.objects.visible_to(self.request.user)
            .filter(dataset__in=Dataset.objects.visible_to(self.request.user))
            .select_related("dataset")
            .order_by("id")
        )


class MetricViewSet(viewsets.ReadOnlyModelViewSet):
    """Every metric: the registry's and the submitted ones the caller may see (family "submitted")."""

    serializer_class = serializers.MetricSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return (
            Metric.objects.listed()
            .visible_to(self.request.user)
            .select_related("current_version", "submission__owner")
            .order_by("slug")
        )
