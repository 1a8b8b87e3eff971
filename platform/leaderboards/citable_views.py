"""Citable snapshots' pages and files, and the staff action that freezes one (thin: leaderboards.citable
does the work). A captioner board's snapshots are shown to whoever may see its dataset."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from catalog.models import Dataset
from leaderboards import citable
from leaderboards.models import CitableSnapshot
from plumbing.limits import limited
from plumbing.refusals import refusal_noted


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
            "live": citable.board_url(dataset),
        },
    )


@require_safe
def snapshot_latest(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """The board's newest snapshot; its (empty) list while it has none."""
    dataset = _board(request, slug)
    latest = _snapshots(dataset).order_by("-number").first()
    return redirect(citable.list_url(dataset) if latest is None else citable.snapshot_url(latest))


@require_safe
def snapshot_detail(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    url = citable.absolute(citable.snapshot_url(snapshot))
    board = citable.shown_payload(snapshot)
    columns, empty = citable.columns_with_numbers(board) if snapshot.dataset is not None else ([], [])
    return render(
        request,
        "leaderboards/snapshot.html",
        {
            "snapshot": snapshot,
            "board": board,
            "columns": columns,
            "empty": empty,
            "ranked_by": citable.ranked_by(board) if snapshot.dataset is not None else "",
            "provenance": citable.shown_provenance(snapshot),
            "title": citable.snapshot_title(snapshot),
            "bibtex": citable.snapshot_bibtex(snapshot, url=url),
            "absolute_url": url,
            "live": citable.live_url(snapshot),
            "list": citable.list_url(snapshot.dataset),
        },
    )


@require_safe
def snapshot_json(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    return JsonResponse(citable.snapshot_json(snapshot), json_dumps_params={"indent": 1})


@require_safe
def snapshot_csv_download(request: HttpRequest, number: int, slug: str | None = None) -> HttpResponse:
    snapshot = _one(request, slug, number)
    response = HttpResponse(citable.snapshot_csv(snapshot), content_type="text/csv; charset=utf-8")
    name = citable.board_key(snapshot)
    response["Content-Disposition"] = f'attachment; filename="capbench-{name}-snapshot-{snapshot.number}.csv"'
    return response


@staff_member_required
@require_POST
@limited("actions", "snapshots frozen", by="user")
def snapshot_freeze_view(request: HttpRequest, slug: str | None = None) -> HttpResponse:
    """Staff: freeze the board as its next snapshot (an optional `note`: what it is for)."""
    dataset = _board(request, slug)
    with refusal_noted(request):  # FreezeRefused: said on the list of snapshots
        snapshot = citable.snapshot_freeze(
            dataset=dataset, by=request.user.get_username(), note=request.POST.get("note", "")
        )
        return redirect(citable.snapshot_url(snapshot))
    return redirect(citable.list_url(dataset))
