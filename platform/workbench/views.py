"""The metric submission form, the owner's metrics, and their lifecycle actions."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from plumbing.http import AuthenticatedHttpRequest
from plumbing.limits import limited
from submissions.services import QuotaExceeded
from workbench import selectors
from workbench.forms import MetricForm
from workbench.models import MetricSubmission
from workbench.services import (
    MetricInfo,
    MetricRefused,
    ScoresFile,
    ScoresRefused,
    metric_submit,
    metric_visibility_set,
    metric_withdraw,
)


@login_required
@limited("submissions", "upload attempts", by="user")
def submit(request: AuthenticatedHttpRequest) -> HttpResponse:
    datasets = selectors.scorable_datasets(request.user)
    form = MetricForm(request.POST or None, request.FILES or None, datasets=datasets)
    problems: list[str] = []
    status, retry_after = (400 if request.method == "POST" else 200), None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        info = MetricInfo(
            data["name"],
            data["description"],
            data["paper_url"],
            data["code_url"],
            higher_is_better=not data["lower_is_better"],
            reference_free=data["reference_free"],
        )
        files = [
            ScoresFile(dataset, data[form.file_field(dataset)].name, data[form.file_field(dataset)])
            for dataset in data["chosen"]
        ]
        trained = [dataset for dataset in datasets if dataset.slug in data["trained_on"]]
        try:
            upload = metric_submit(
                owner=request.user, info=info, files=files, is_public=data["is_public"], trained_on=trained
            )
        except ScoresRefused as error:
            problems = error.problems
        except MetricRefused as error:
            problems = [str(error)]
        except QuotaExceeded as error:
            problems, status, retry_after = [str(error)], 429, error.retry_after_seconds
        else:
            messages.info(request, "Your scores were stored; the correlations with people are being computed.")
            return redirect("leaderboards:metric-detail", slug=upload.submission.metric.slug)
    response = render(request, "workbench/submit.html", {"form": form, "problems": problems}, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


@never_cache
@login_required
def mine(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, "workbench/mine.html", {"submissions": selectors.metrics_of(owner=request.user)})


@login_required
@require_POST
@limited("actions", "changes to your metrics", by="user")
def visibility(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    submission = get_object_or_404(MetricSubmission, pk=pk, owner=request.user)
    try:
        metric_visibility_set(submission=submission, is_public=request.POST.get("public") == "1")
    except MetricRefused as error:
        messages.error(request, str(error))
    return redirect("workbench:mine")


@login_required
@require_http_methods(["GET", "POST"])
@limited("actions", "changes to your metrics", by="user")
def withdraw(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """GET: what withdrawing does, and a button to confirm it; POST: withdraw."""
    submission = get_object_or_404(MetricSubmission.objects.select_related("metric"), pk=pk, owner=request.user)
    if request.method == "GET":
        return render(request, "workbench/withdraw.html", {"submission": submission})
    metric_withdraw(submission=submission)
    messages.info(request, f"“{submission.metric.name}” was withdrawn; its files and scores are kept.")
    return redirect("workbench:mine")
