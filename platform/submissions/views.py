"""Upload, status (with a polling endpoint), my submissions and their scores. Their visibility and
withdrawal: catalog.uploads.views (submissions/urls.py)."""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from rest_framework.authtoken.models import Token

from catalog.visibility import references_visible
from plumbing.http import AuthenticatedHttpRequest
from plumbing.limits import limited
from plumbing.refusals import FormPage
from plumbing.spreadsheets import spreadsheet_row
from scoring.models import Score
from scoring.selectors import caption_scores_all, score_columns
from scoring.shown import Shown
from submissions import selectors
from submissions.cards import results_card
from submissions.forms import SubmissionForm
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create


@login_required
@limited("submissions", "upload attempts", by="user")
def upload(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = SubmissionForm(request.POST or None, request.FILES or None, initial={"dataset": request.GET.get("dataset")})
    page = FormPage(request, "submissions/upload.html", {"form": form})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        method = MethodInfo(data["method_name"], data["description"], data["paper_url"], data["code_url"])
        with page.refusals():
            submission = submission_create(
                owner=request.user,
                dataset=data["dataset"],
                file_name=data["results"].name,
                content=data["results"],
                method=method,
                is_public=data["is_public"],
            )
            return redirect("submissions:detail", pk=submission.pk)
    return page.response()


def detail(request: HttpRequest, pk: int) -> HttpResponse:
    submission = selectors.submission_shown(pk=pk, viewer=request.user)
    metric = request.GET.get("metric")
    table = selectors.score_page(
        submission=submission, viewer=request.user, metric=metric, number=request.GET.get("page")
    )
    return render(
        request,
        "submissions/detail.html",
        {
            "submission": submission,
            "progress": selectors.submission_progress(submission=submission, detail=request.user.is_staff),
            "card": results_card(submission=submission, viewer=request.user),
            "page": table.page,
            "table": table,
            "metric": metric,
            "is_owner": request.user.is_authenticated and request.user.pk == submission.owner_id,
            "scores_withheld": not references_visible(submission.dataset, request.user),
        },
    )


def progress(request: HttpRequest, pk: int) -> JsonResponse:
    submission = selectors.submission_shown(pk=pk, viewer=request.user)
    return JsonResponse(selectors.submission_progress(submission=submission, detail=request.user.is_staff))


@never_cache  # shows the API token: never kept by a browser or proxy cache
@login_required
def mine(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(
        request,
        "submissions/mine.html",
        {
            "submissions": selectors.submissions_of(owner=request.user),
            "token": Token.objects.filter(user=request.user).first(),
        },
    )


def scores_csv(request: HttpRequest, pk: int) -> StreamingHttpResponse:
    """Every per-caption score of the submission, streamed: one row per caption with each metric a
    column in points, as the pages show it (`?layout=long`: one row per caption and metric with its
    value on the metric's scale and in points; docs/api.md, "Per-caption scores")."""
    submission = selectors.submission_shown(pk=pk, viewer=request.user)
    writer = csv.writer(_Echo())
    if request.GET.get("layout") == "long":
        lines = _long_lines(submission, request.user, writer)
    else:
        lines = _wide_lines(submission, request.user, writer)
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="submission-{submission.pk}-scores.csv"'
    return response


def _wide_lines(submission: Submission, viewer, writer) -> Iterator[str]:
    columns = score_columns(system=submission.system, viewer=viewer)
    yield writer.writerow(["image_id", "caption", *(column.slug for column in columns), "errors"])
    for row in caption_scores_all(system=submission.system, viewer=viewer):
        cells = [row.scores.get(column.slug) for column in columns]
        errors = "; ".join(f"{slug}: {score.error}" for slug, score in row.scores.items() if score.error)
        # spreadsheet_row: captions, ids, errors never become a live formula
        points = [None if cell is None else cell.shown.points for cell in cells]
        yield writer.writerow(spreadsheet_row([row.item, row.caption, *points, errors]))


def _long_lines(submission: Submission, viewer, writer) -> Iterator[str]:
    rows = (
        Score.objects.visible_to(viewer)
        .filter(caption__system=submission.system)
        .order_by("caption__item__external_id", "metric_version__metric__slug")
        .values_list(
            "caption__item__external_id",
            "caption__text",
            "metric_version__metric__slug",
            "metric_version__config_hash",
            "value",
            "metric_version__metric__points",
            "error",
        )
    )
    yield writer.writerow(["image_id", "caption", "metric", "metric_version", "value", "points", "error"])
    for *named, value, scale, error in rows.iterator():
        yield writer.writerow(spreadsheet_row([*named, value, Shown(value, scale=scale).points, error]))


class _Echo:
    def write(self, value: str) -> str:
        return value
