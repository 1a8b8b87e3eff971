"""The owner's two actions on an owned upload, for every kind: make it public or private, and
withdraw it. The URL names the kind (`{"kind": SUBMISSIONS}` in submissions/urls.py, `METRICS` in
workbench/urls.py); as Django's generic views do, the template and the page to go back to are named
after the kind's app: `<app>/withdraw.html`, `<app>:mine`."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from catalog.uploads.services import UploadKind, upload_visibility_set, upload_withdraw
from plumbing.http import AuthenticatedHttpRequest
from plumbing.limits import limited
from plumbing.refusals import refusal_noted

# One counter for both kinds (the `actions` rate, per account).
CHANGES = "changes to your submissions and metrics"


@login_required
@require_POST
@limited("actions", CHANGES, by="user")
def visibility(request: AuthenticatedHttpRequest, pk: int, kind: UploadKind) -> HttpResponse:
    upload = get_object_or_404(kind.model, pk=pk, owner=request.user)
    with refusal_noted(request):
        upload_visibility_set(upload=upload, is_public=request.POST.get("public") == "1", kind=kind)
    return redirect(f"{kind.model._meta.app_label}:mine")


@login_required
@require_http_methods(["GET", "POST"])
@limited("actions", CHANGES, by="user")
def withdraw(request: AuthenticatedHttpRequest, pk: int, kind: UploadKind) -> HttpResponse:
    """GET: what withdrawing does, and a button to confirm it; POST: withdraw."""
    upload = get_object_or_404(kind.model, pk=pk, owner=request.user)
    app = kind.model._meta.app_label
    if request.method == "GET":
        return render(request, f"{app}/withdraw.html", {"submission": upload})
    upload_withdraw(upload=upload, kind=kind)
    messages.info(request, f"“{upload.name}” was withdrawn; {kind.kept} are kept.")
    return redirect(f"{app}:mine")
