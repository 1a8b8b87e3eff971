"""The REST API, read-only except for submissions (thin: services and selectors do the work)."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import astuple
from pathlib import Path
from typing import TypeVar, cast

from django.contrib.auth.models import User
from django.db.models import Max, Min, Q
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.utils.cache import patch_vary_headers
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import NotAcceptable, NotAuthenticated, NotFound, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.lockout import attempt_refusal, attempt_succeeded, lockout_response
from api import documentation as shapes
from api import serializers
from api.pagination import ScoreCursor
from api.throttles import ActionRate, ApiRate, SubmissionRate, TokenRate
from campaigns.selectors import campaigns_visible
from capbench import limits
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item, System
from catalog.selectors import chosen_subset
from catalog.services.candidates import FORMATS as CANDIDATE_FORMATS
from catalog.services.imports import dataset_import
from catalog.views import candidates_response
from catalog.visibility import references_visible
from leaderboards import selectors as boards
from leaderboards.caching import (
    board_headers,
    board_validators,
    conditional_response,
    kept_fragment,
    not_modified,
    page_validator,
    searched,
)
from leaderboards.exports import board_csv_text, board_json, metric_board_json
from leaderboards.models import CitableSnapshot
from leaderboards.snapshots import board_payload
from leaderboards.subsets import subset_kept, subset_payload
from scoring.models import CorrelationResult, Metric, MetricVersion, Score
from submissions import selectors as submission_selectors
from submissions.cards import results_card
from submissions.formats import SubmissionFileError
from submissions.models import Submission
from submissions.services import (
    DuplicateSubmission,
    MethodInfo,
    QuotaExceeded,
    SubmissionRefused,
    submission_create,
)
from workbench.models import MetricSubmission
from workbench.selectors import private_metric_slugs
from workbench.services import (
    MetricInfo,
    MetricRefused,
    ScoresFile,
    ScoresRefused,
    metric_submit,
    metric_visibility_set,
    metric_withdraw,
)


class IsStaffOrReadOnly(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return request.method in permissions.SAFE_METHODS or bool(request.user and request.user.is_staff)


class _Download(BaseRenderer):
    """A download's format for DRF's negotiation (`?format=`, the `.csv` suffix, Accept). The
    download itself is streamed past the renderer; only an error body (a dict) is rendered, as JSON."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return json.dumps(data).encode()


class JsonLinesRenderer(_Download):
    media_type = "application/x-ndjson"
    format = "jsonl"


class CsvRenderer(_Download):
    media_type = "text/csv"
    format = "csv"


class _DownloadNegotiation(DefaultContentNegotiation):
    """`?format=` or the suffix choose the format, whatever Accept says; without either, an Accept
    that names none of the formats (a client asking for JSON of a download) gets the first rather
    than a 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            chosen = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
            renderer = next((r for r in renderers if r.format == chosen), renderers[0])
            return renderer, renderer.media_type


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
        with tempfile.TemporaryDirectory(prefix="capbench-upload-") as folder:
            path = Path(folder) / Path(upload.name).name
            path.write_bytes(upload.read())
            try:
                bundle = read_bundle("canonical", path)
            except ImportFormatError as error:
                raise ValidationError({"file": str(error).replace(folder + "/", "")}) from None
        outcome = dataset_import(
            bundle=bundle,
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
        content_negotiation_class=_DownloadNegotiation,
        pagination_class=None,
    )
    def candidates(self, request: Request, slug: str, format: str | None = None) -> StreamingHttpResponse:
        return candidates_response(self.get_object(), request.accepted_renderer.format)


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


CAPTION_RANGE = '"catalog_caption"."id" BETWEEN %s AND %s'  # the page's select_related join of Caption


@extend_schema_view(list=extend_schema(parameters=shapes.SCORE_PARAMETERS))
class ScoreViewSet(viewsets.ReadOnlyModelViewSet):
    """Per-caption scores; filter by `dataset`, `system`, `metric` (slugs). Cursor-paginated."""

    serializer_class = serializers.ScoreSerializer
    pagination_class = ScoreCursor

    def get_queryset(self):
        query, viewer = self.request.query_params, self.request.user
        scores = Score.objects.visible_to(viewer).filter(metric_version__metric__in=Metric.objects.visible_to(viewer))
        # Each filter becomes ids first, so that a page is read in caption order from the indexes
        # (caption_dataset_order or caption_system_order, then score_unique), whatever the number of
        # scores stored; never a sort of every match (docs/performance.md, bench/scale.py).
        datasets = Dataset.objects.visible_to(viewer)
        if query.get("dataset"):
            datasets = datasets.filter(slug=query["dataset"])
            found = list(datasets.values_list("pk", flat=True))
            if not found:
                return Score.objects.none()
            scores = scores.filter(caption__dataset_id=found[0])
        else:
            scores = scores.filter(caption__dataset__in=datasets)
        if query.get("system"):
            systems = list(
                System.objects.visible_to(viewer)
                .filter(slug=query["system"], dataset__in=datasets)
                .values_list("pk", flat=True)
            )
            scores = scores.filter(caption__system_id__in=systems)
        if query.get("metric"):
            versions = list(MetricVersion.objects.filter(metric__slug=query["metric"]).values_list("pk", flat=True))
            scores = scores.filter(metric_version_id__in=versions)
        if query.get("dataset") or query.get("system"):
            # The filtered captions' first and last ids (two index probes): the page's walk along
            # score_unique starts at the first rather than at the table's first score, which the
            # planner, expecting matches spread evenly, would otherwise do for a late system.
            captions = Caption.objects.filter(dataset_id=found[0]) if query.get("dataset") else Caption.objects
            if query.get("system"):
                captions = captions.filter(system_id__in=systems)
            bounds = captions.aggregate(low=Min("id"), high=Max("id"))
            if bounds["low"] is None:
                return Score.objects.none()
            scores = scores.filter(caption_id__gte=bounds["low"], caption_id__lte=bounds["high"])
            # The same bounds on the captions' side of the join: PostgreSQL carries equalities across
            # a join, not ranges, and would walk the captions from the table's first one.
            scores = scores.extra(where=[CAPTION_RANGE], params=[bounds["low"], bounds["high"]])
        return scores.select_related("caption__item", "caption__system", "metric_version__metric").only(
            *serializers.ScoreSerializer.READS
        )


@extend_schema_view(list=extend_schema(parameters=shapes.CORRELATION_PARAMETERS))
class CorrelationViewSet(viewsets.ReadOnlyModelViewSet):
    """Meta-evaluation cells; filter by `dataset`, `metric`, `protocol` (paper/canonical/live), `level`."""

    serializer_class = serializers.CorrelationSerializer

    def get_queryset(self):
        query = self.request.query_params
        results = (
            CorrelationResult.objects.filter(dataset__in=Dataset.objects.visible_to(self.request.user))
            .filter(metric_version__metric__in=Metric.objects.visible_to(self.request.user))
            .select_related("dataset", "metric_version__metric")
            .order_by("id")
        )
        if query.get("dataset"):
            results = results.filter(dataset__slug=query["dataset"])
        if query.get("metric"):
            results = results.filter(metric_version__metric__slug=query["metric"])
        if query.get("protocol"):
            results = results.filter(protocol_name=query["protocol"])
        if query.get("level"):
            results = results.filter(level=query["level"])
        return results


@extend_schema_view(
    list=extend_schema(
        parameters=[
            shapes.query("board", "`captioner` or `metric`", enum=("captioner", "metric")),
            shapes.query("dataset", "a captioner board's dataset slug"),
        ]
    )
)
class CitableSnapshotViewSet(viewsets.ReadOnlyModelViewSet):
    """Citable snapshots: boards frozen by staff, numbered per board and never changed (newest first);
    one's `board_json` is the board as it was."""

    def get_serializer_class(self):
        return (
            serializers.CitableSnapshotDetailSerializer
            if self.action == "retrieve"
            else serializers.CitableSnapshotSerializer
        )

    def get_queryset(self):
        query = self.request.query_params
        snapshots = CitableSnapshot.objects.filter(
            Q(dataset__isnull=True) | Q(dataset__in=Dataset.objects.visible_to(self.request.user))
        ).select_related("dataset")
        if self.action == "list":
            snapshots = snapshots.defer("payload")
        if query.get("board"):
            snapshots = snapshots.filter(board=query["board"])
        if query.get("dataset"):
            snapshots = snapshots.filter(dataset__slug=query["dataset"])
        return snapshots.order_by("-created_at", "-id")


class CampaignViewSet(viewsets.ReadOnlyModelViewSet):
    """Live human evaluation: rating campaigns and arenas on the datasets the caller may see, each
    with its systems the caller may see; one campaign's results besides (agreement, the people
    column per system, annotator quality under pseudonyms, the Bradley–Terry fit)."""

    serializer_class = serializers.CampaignSerializer
    lookup_field = "slug"

    def get_queryset(self):
        return campaigns_visible(self.request.user).order_by("-created_at", "-id")

    @extend_schema(summary="A campaign and its results", responses=shapes.CampaignDetail)
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        campaign = self.get_object()
        results = serializers.campaign_results_json(campaign, request.user)
        return Response({**self.get_serializer(campaign).data, "results": results})


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
        try:
            submission = submission_create(
                owner=owner,
                dataset=data["dataset"],
                file_name=data["results"].name,
                content=data["results"],
                method=MethodInfo(data["method_name"], data["description"], data["paper_url"], data["code_url"]),
                metrics=data["metrics"],
                is_public=data["is_public"],
            )
        except SubmissionFileError as error:
            raise ValidationError(
                {
                    "results": [f"{error.file_name}: {p}" for p in error.problems]
                    + ([f"… and {error.more:,} more problem(s)"] if error.more else [])
                }
            ) from None
        except SubmissionRefused as error:
            raise ValidationError({"detail": str(error)}) from None
        except DuplicateSubmission as error:
            existing = error.existing
            return Response(
                {
                    "detail": str(error),
                    "submission": existing.pk,
                    "url": request.build_absolute_uri(f"/api/v1/submissions/{existing.pk}/"),
                    "page": request.build_absolute_uri(f"/submissions/{existing.pk}/"),
                },
                status=status.HTTP_409_CONFLICT,
            )
        except QuotaExceeded as error:
            body = {"detail": str(error), "retry_after": error.retry_after_seconds}
            if error.retry_at:
                body["retry_at"] = error.retry_at.isoformat()
            return Response(
                body, status=status.HTTP_429_TOO_MANY_REQUESTS, headers={"Retry-After": str(error.retry_after_seconds)}
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
        return Response(serializers.results_json(submission, results_card(submission=submission)))


class MetricSubmissionViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Submitted metrics: your own and public ones. POST (multipart, token) a metric's scores:
    `name`, `dataset` + `scores` (a JSONL or CSV file of `caption_id`, `score`), or one
    `scores_<dataset slug>` file per dataset; `lower_is_better`, `reference_free`, `is_public`,
    `trained_on` (dataset slugs). The same name again makes a new version. `visibility` and
    `withdraw` change it; the correlations are at `/api/v1/correlations/?metric=<slug>`."""

    permission_classes = [permissions.IsAuthenticatedOrReadOnly]

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
        upload = self.action == "create"
        changes = self.action in ("visibility", "withdraw")
        return [ApiRate(), *([SubmissionRate()] if upload else []), *([ActionRate()] if changes else [])]

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
        try:
            upload = metric_submit(
                owner=owner,
                info=info,
                files=files,
                is_public=data["is_public"],
                trained_on=[visible[slug] for slug in data["trained_on"]] or None,
            )
        except ScoresRefused as error:
            raise ValidationError({"scores": error.problems}) from None
        except MetricRefused as error:
            raise ValidationError({"detail": str(error)}) from None
        except QuotaExceeded as error:
            return Response(
                {"detail": str(error), "retry_after": error.retry_after_seconds},
                status=status.HTTP_429_TOO_MANY_REQUESTS,
                headers={"Retry-After": str(error.retry_after_seconds)},
            )
        submission = self.get_queryset().get(pk=upload.submission_id)
        return Response(serializers.MetricSubmissionSerializer(submission).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request={
            "multipart/form-data": shapes.Visibility,
            "application/x-www-form-urlencoded": shapes.Visibility,
            "application/json": shapes.Visibility,
        },
        responses=serializers.MetricSubmissionSerializer,
    )
    @action(detail=True, methods=["post"])
    def visibility(self, request: Request, pk: str) -> Response:
        submission = self._own(request, pk)
        try:
            data = request.data if isinstance(request.data, dict) else {}
            metric_visibility_set(submission=submission, is_public=_truthy(data.get("public")))
        except MetricRefused as error:
            raise ValidationError({"detail": str(error)}) from None
        return Response(serializers.MetricSubmissionSerializer(submission).data)

    @extend_schema(request=None, responses=serializers.MetricSubmissionSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        submission = metric_withdraw(submission=self._own(request, pk))
        return Response(serializers.MetricSubmissionSerializer(submission).data)

    def _own(self, request: Request, pk: str) -> MetricSubmission:
        found = (
            MetricSubmission.objects.filter(pk=int(pk), owner=self._owner(request)).first() if pk.isdigit() else None
        )
        if found is None:
            raise NotFound()
        return found


def _truthy(value) -> bool:
    return str(value).lower() in ("1", "true", "yes", "on")


class LeaderboardView(APIView):
    """The captioner board of a dataset (systems × metrics); `?sort=<metric>&order=asc|desc`, and
    `?domain=` one of the dataset's item subsets (nocaps' in-domain, near-domain, out-domain)."""

    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CsvRenderer]
    content_negotiation_class = _DownloadNegotiation  # ?format=csv wins over an Accept naming JSON

    @extend_schema(
        summary="A dataset's captioner board",
        parameters=shapes.CAPTIONER_BOARD_PARAMETERS,
        responses={
            (200, "application/json"): shapes.CaptionerBoard,
            (200, CsvRenderer.media_type): OpenApiTypes.STR,
            304: OpenApiResponse(description="not modified since the `ETag` sent in If-None-Match"),
        },
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        try:
            state = boards.board_request_state(slug, request.user)
        except Dataset.DoesNotExist:
            raise NotFound("no such dataset") from None
        etag = board_validators(request, state, variant=request.accepted_renderer.format, api=True)
        subset = chosen_subset(request.query_params, state.dataset)
        if subset is not None and not_modified(request._request, etag) is None:
            payload, _ = board_payload(state.dataset, with_version=True)
            if subset_kept(state.dataset, payload, subset) is None:  # a bootstrap per cell: rate-limited
                decision = limits.hit("comparisons", f"address:{limits.client_address(request._request)}")
                if not decision.allowed:
                    return limits.too_many(request._request, decision, "board computations")

        def board() -> tuple[dict, bool]:
            """The board, and whether it is the snapshot the ETag was made from (not rebuilt since)."""
            payload, built = board_payload(state.dataset, with_version=True)
            if subset is not None:
                payload = subset_payload(state.dataset, payload, subset)
            columns, rows = boards.captioner_board_query(
                state.dataset, request.query_params, viewer=request.user, visible=state.visible, payload=payload
            )
            people = payload.get("people") if any(row.people for row in rows) else None
            data = board_json(
                state.dataset,
                columns,
                rows,
                staff=request.user.is_staff,
                people=people,
                people_campaign=payload.get("people_campaign"),
                subset=subset,
            )
            return data, built is not None and built == state.version

        if request.accepted_renderer.format in ("json", "csv"):
            # Rendered here, so that an anonymous answer is kept whole like the page's (the request is
            # DRF's: its user is the token's, its headers the same).
            def respond() -> tuple[HttpResponse, bool]:
                data, current = board()
                if request.accepted_renderer.format == "csv":
                    return HttpResponse(board_csv_text(data), content_type="text/csv; charset=utf-8"), current
                return HttpResponse(JSONRenderer().render(data), content_type="application/json"), current

            return _api_headers(
                conditional_response(cast(HttpRequest, request), etag, respond, keep=not searched(request))
            )
        unchanged = not_modified(request._request, etag)  # (the same headers; the user is this request's)
        if unchanged is not None:
            return _api_headers(board_headers(unchanged, request, etag))
        data, current = board()
        return _api_headers(board_headers(Response(data), request, etag if current else None))


class MetricBoardView(APIView):
    """The meta-evaluation board: `?protocol=paper|canonical|live&level=caption|system`, optionally
    `&family=<family>&reference=free|based`, read as the page reads them (an unknown protocol: 404)."""

    @extend_schema(
        summary="The metric board (agreement with people)",
        parameters=shapes.METRIC_BOARD_PARAMETERS,
        responses={
            200: shapes.MetricBoard,
            304: OpenApiResponse(description="not modified since the `ETag` sent in If-None-Match"),
            404: OpenApiResponse(shapes.Problem, description="an unknown protocol or family"),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        version = boards.metric_board_version()
        try:
            query = boards.metric_board_query(request.query_params, strict=True, families=version.families)
        except (boards.UnknownProtocol, boards.UnknownFamily) as error:
            raise NotFound(str(error)) from None
        extra = private_metric_slugs(request.user)
        if extra:  # the caller's own unpublished metrics (or staff): a board of their own, never kept
            text = json.dumps(metric_board_json(query, extra=extra))
            digest = hashlib.sha256(text.encode()).hexdigest()
        else:
            text, digest = kept_fragment(
                "metric-board-json", version.key, astuple(query), lambda: json.dumps(metric_board_json(query))
            )
        etag = page_validator(request, digest, request.accepted_renderer.format)
        unchanged = not_modified(request._request, etag)
        if unchanged is not None:
            return _api_headers(board_headers(unchanged, request, etag))
        return _api_headers(board_headers(Response(json.loads(text)), request, etag))


R = TypeVar("R", bound=HttpResponse)


def _api_headers(response: R) -> R:
    """The API negotiates its format from Accept: a cache must keep one copy per Accept."""
    patch_vary_headers(response, ["Accept"])
    return response


@method_decorator(never_cache, name="dispatch")
class TokenView(ObtainAuthToken):
    """POST username and password for your API token: limited per address (`tokens`), and sign-in
    attempts per address and account as on the web form (accounts.lockout); never cached."""

    throttle_classes = [TokenRate]

    @extend_schema(
        summary="Your API token",
        request={
            "application/x-www-form-urlencoded": shapes.Credentials,
            "multipart/form-data": shapes.Credentials,
            "application/json": shapes.Credentials,
        },
        responses=shapes.Token,
    )
    # DRF's stubs say Response; APIView.finalize_response takes any HttpResponseBase, and the 429s are Django's.
    def post(self, request: Request, *args, **kwargs) -> Response | HttpResponse:  # type: ignore[override]
        username = request.data.get("username", "") if hasattr(request.data, "get") else ""
        username = username if isinstance(username, str) else ""
        refusal = attempt_refusal(request._request, username)
        if refusal is not None:
            return refusal
        try:
            response = super().post(request, *args, **kwargs)
        except ValidationError:
            if getattr(request, "axes_locked_out", False) or getattr(request._request, "axes_locked_out", False):
                return lockout_response(request._request, None, {"username": username})
            raise
        attempt_succeeded(username)
        return response
