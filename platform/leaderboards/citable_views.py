"""Citable snapshots' pages and files, and the staff action that freezes one (thin: leaderboards.citable
does the work). A captioner board's snapshots are shown to whoever may see its dataset."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from capbench.limits import limited
from catalog.models import Dataset
from leaderboards.citable import (
    FreezeRefused,
    live_url,
    snapshot_bibtex,
    snapshot_csv,
    snapshot_freeze,
    snapshot_title,
    snapshot_url,
)
from leaderboards.models import CitableSnapshot


def _board(request: HttpRequest, slug: str | None) -> Dataset | None:
    """The dataset whose board `slug` names (404 when the viewer may not see it); None: the metric board."""
    return None if slug is None else get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)


def _snapshots(dataset: Dataset | None):
    board = CitableSnapshot.Board.METRIC if dataset is None else CitableSnapshot.Board.CAPTIONER
    return CitableSnapshot.objects.filter(board=board, dataset=dataset).select_related("dataset")


def _one(request: HttpRequest, slug: str | None, number: int) -> CitableSnapshot:
    return get_object_or_404(_snapshots(_board(request, slug)), number=number)


@require_safe
def snapshot_list(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    dataset = _board(request, slug)
    return render(
        request,
        "leaderboards/snapshot_list.html",
        {
            "dataset": dataset,
            "snapshots": _snapshots(dataset).order_by("-number").defer("payload", "provenance"),
            "live": reverse("leaderboards:metrics")
            if dataset is None
            else reverse("leaderboards:captioner", args=[slug]),
        },
    )


@require_safe
def snapshot_latest(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """The board's newest snapshot; its (empty) list while it has none."""
    dataset = _board(request, slug)
    latest = _snapshots(dataset).order_by("-number").first()
    if latest is None:
        return redirect(
            reverse("leaderboards:metric-snapshots")
            if dataset is None
            else reverse("leaderboards:snapshots", args=[slug])
        )
    return redirect(snapshot_url(latest))


@require_safe
def snapshot_detail(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    url = request.build_absolute_uri(snapshot_url(snapshot))
    return render(
        request,
        "leaderboards/snapshot.html",
        {
            "snapshot": snapshot,
            "title": snapshot_title(snapshot),
            "bibtex": snapshot_bibtex(snapshot, url=url),
            "absolute_url": url,
            "live": live_url(snapshot),
            "list": reverse("leaderboards:metric-snapshots")
            if snapshot.dataset is None
            else reverse("leaderboards:snapshots", args=[snapshot.dataset.slug]),
            "metric_names": {m["slug"]: m["name"] for m in snapshot.payload.get("metrics", [])},
        },
    )


@require_safe
def snapshot_json(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    body = {
        "board": snapshot.board,
        "dataset": snapshot.dataset.slug if snapshot.dataset else None,
        "number": snapshot.number,
        "created_at": snapshot.created_at.isoformat(),
        "title": snapshot_title(snapshot),
        "note": snapshot.note,
        "url": request.build_absolute_uri(snapshot_url(snapshot)),
        "live": request.build_absolute_uri(live_url(snapshot)),
        "digest": snapshot.digest,
        "provenance": snapshot.provenance,
        "board_json": snapshot.payload,
    }
    response = JsonResponse(body, json_dumps_params={"indent": 1})
    response["Cache-Control"] = (
        "public, max-age=86400" if snapshot.dataset is None or snapshot.dataset.is_public else "private"
    )
    return response


@require_safe
def snapshot_csv_download(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    response = HttpResponse(snapshot_csv(snapshot), content_type="text/csv; charset=utf-8")
    name = snapshot.dataset.slug if snapshot.dataset else "metrics"
    response["Content-Disposition"] = f'attachment; filename="capbench-{name}-snapshot-{snapshot.number}.csv"'
    return response


@staff_member_required
@require_POST
@limited("actions", "snapshots frozen", by="user")
def snapshot_freeze_view(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """Staff: freeze the board as its next snapshot (an optional `note`: what it is for)."""
    dataset = _board(request, slug)
    try:
        snapshot = snapshot_freeze(dataset=dataset, by=request.user.get_username(), note=request.POST.get("note", ""))
    except FreezeRefused as error:
        messages.error(request, str(error))
        return redirect(
            reverse("leaderboards:metrics") if dataset is None else reverse("leaderboards:captioner", args=[slug])
        )
    messages.info(request, f"Snapshot {snapshot.number} frozen: this page never changes.")
    return redirect(snapshot_url(snapshot))
