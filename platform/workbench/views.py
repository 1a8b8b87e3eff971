"""The metric submission form and the owner's metrics. Their visibility and withdrawal:
catalog.uploads.views (workbench/urls.py)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from plumbing.http import AuthenticatedHttpRequest
from plumbing.limits import limited
from plumbing.refusals import FormPage
from workbench import selectors
from workbench.forms import MetricForm
from workbench.services import MetricInfo, ScoresFile, metric_submit


@login_required
@limited("submissions", "upload attempts", by="user")
def submit(request: AuthenticatedHttpRequest) -> HttpResponse:
    datasets = selectors.scorable_datasets(request.user)
    form = MetricForm(request.POST or None, request.FILES or None, datasets=datasets)
    page = FormPage(request, "workbench/submit.html", {"form": form})
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
        with page.refusals():
            upload = metric_submit(
                owner=request.user, info=info, files=files, is_public=data["is_public"], trained_on=trained
            )
            messages.info(request, "Your scores were stored; the correlations with people are being computed.")
            return redirect("leaderboards:metric-detail", slug=upload.submission.metric.slug)
    return page.response()


@never_cache
@login_required
def mine(request: AuthenticatedHttpRequest) -> HttpResponse:
    return render(request, "workbench/mine.html", {"submissions": selectors.metrics_of(owner=request.user)})
