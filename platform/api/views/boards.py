"""The boards over the API: a dataset's captioner board (JSON, CSV, the browsable form), two of its
systems compared, and the metric board. Each is the page's own model rendered as JSON
(leaderboards.captioner, leaderboards.compare_page, leaderboards.metric_board), read through the same
visibility rule, validators and limits as the page."""

from __future__ import annotations

import json

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api import documentation as shapes
from api.views.common import CsvRenderer, DownloadNegotiation, api_headers
from catalog.models import Dataset
from leaderboards import metric_board as boards
from leaderboards.caching import board_headers, not_modified, page_validator
from leaderboards.captioner import CaptionerBoardPage
from leaderboards.compare_page import comparison_for, comparison_json
from leaderboards.comparison import systems_for_comparison
from leaderboards.exports import board_csv_text, board_json, metric_board_page_json
from leaderboards.responses import captioner_board_response, metric_board_text
from workbench.selectors import private_metric_slugs


class LeaderboardView(APIView):
    """The captioner board of a dataset (systems × metrics); `?sort=<metric>&order=asc|desc`, and
    `?domain=` one of the dataset's item subsets (nocaps' in-domain, near-domain, out-domain)."""

    renderer_classes = [JSONRenderer, BrowsableAPIRenderer, CsvRenderer]
    content_negotiation_class = DownloadNegotiation  # ?format=csv wins over an Accept naming JSON

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
        chosen = request.accepted_renderer.format

        def render(page: CaptionerBoardPage) -> HttpResponse:
            data = board_json(page, staff=request.user.is_staff)
            if chosen == "csv":
                return HttpResponse(board_csv_text(data), content_type="text/csv; charset=utf-8")
            if chosen == "json":  # rendered here, so that an anonymous answer is kept whole like the page's
                return HttpResponse(JSONRenderer().render(data), content_type="application/json")
            return Response(data)  # the browsable form: rendered by the view, never kept

        response = captioner_board_response(request, slug, render, variant=chosen, api=True, keep=chosen != "api")
        return api_headers(response)


class CompareView(APIView):
    """Two systems of a dataset's board compared (`?a=&b=` system slugs): per metric each system's
    number as the board shows it, and the paired difference a − b with its interval and p-value."""

    @extend_schema(
        summary="Two systems compared",
        parameters=[
            shapes.query("a", "a system's slug (system A)"),
            shapes.query("b", "another system's slug (system B)"),
        ],
        responses={200: shapes.Comparison},
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        dataset = Dataset.objects.visible_to(request.user).filter(slug=slug).first()
        if dataset is None:
            raise NotFound("no such dataset")
        first, second = systems_for_comparison(
            dataset, request.query_params.get("a"), request.query_params.get("b"), request.user
        )
        found = comparison_for(request, dataset, first, second)
        if isinstance(found, HttpResponse):  # too many comparisons from this address
            return found
        return api_headers(board_headers(Response(comparison_json(found)), request, None))


class MetricBoardView(APIView):
    """The meta-evaluation board: `?protocol=paper|canonical|live&level=caption|system`, optionally
    `&family=<family>&reference=free|based&sort=<column key, dataset slug or metric>&order=asc|desc`,
    read as the page reads them (an unknown protocol or family: 404; an unknown sort: 400), its
    metrics in the page's order (leaderboards.metric_board.MetricBoardPage)."""

    @extend_schema(
        summary="The metric board (agreement with people)",
        parameters=shapes.METRIC_BOARD_PARAMETERS,
        responses={
            200: shapes.MetricBoard,
            304: OpenApiResponse(description="not modified since the `ETag` sent in If-None-Match"),
            400: OpenApiResponse(shapes.Problem, description="a sort naming no column of the board"),
            404: OpenApiResponse(shapes.Problem, description="an unknown protocol or family"),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        version = boards.metric_board_version()
        # An unknown protocol or family: 404, an unknown sort: 400 (leaderboards.metric_board's errors).
        query = boards.metric_board_query(request.query_params, strict=True, families=version.families)
        text, digest = metric_board_text(
            "metric-board-json",
            version.key,
            query,
            lambda page: json.dumps(metric_board_page_json(page)),
            extra=private_metric_slugs(request.user),
            strict=True,
        )
        etag = page_validator(request, digest, request.accepted_renderer.format)
        unchanged = not_modified(request._request, etag)
        if unchanged is not None:
            return api_headers(board_headers(unchanged, request, etag))
        return api_headers(board_headers(Response(json.loads(text)), request, etag))
