"""Board pages and their CSV/JSON downloads (thin: selectors build the tables)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Set as AbstractSet
from dataclasses import astuple

from csp.decorators import csp_update
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from capbench import storage
from capbench.spreadsheets import spreadsheet_row
from catalog.models import Dataset, Item
from leaderboards import charts, selectors
from leaderboards.caching import conditional_board, conditional_response, kept_fragment, page_validator
from leaderboards.items import item_page
from leaderboards.rendering import board_rows_html
from scoring.models import CorrelationResult, Metric, Score, SignificanceResult
from scoring.services.pictures import picture_name


@require_safe
@conditional_board
def captioner_board(
    request: HttpRequest, dataset: Dataset, *, visible: AbstractSet[int], payload: dict
) -> HttpResponse:
    sort, order = request.GET.get("sort"), request.GET.get("order")
    columns, rows = selectors.captioner_board_query(
        dataset, request.GET, viewer=request.user, visible=visible, payload=payload
    )
    download = request.GET.get("download")
    if download == "json":
        return JsonResponse(board_json(dataset, columns, rows), json_dumps_params={"indent": 1})
    if download == "csv":
        return _board_csv(dataset, columns, rows)
    return render(
        request,
        "leaderboards/captioner.html",
        {
            "dataset": dataset,
            "columns": columns,
            "rows": rows,
            "sort": sort,
            "order": order,
            "table_rows": board_rows_html(columns, rows, sort),
        },
    )


@require_safe
def metric_board(request: HttpRequest) -> HttpResponse:
    """The same table for every viewer (public datasets only): rendered once per version of what it
    is read from and per query, then wrapped in the viewer's page."""
    version = selectors.metric_board_version()
    query = selectors.metric_board_query(request.GET, families=version.families)
    board, digest = kept_fragment(
        "metric-board", version.key, astuple(query), lambda: _metric_board_html(query, version.families)
    )
    page = mark_safe(board)  # noqa: S308  (our template's output)
    return conditional_response(
        request,
        page_validator(request, digest),
        lambda: (render(request, "leaderboards/metrics.html", {"board": page}), True),
    )


def _metric_board_html(query: selectors.MetricBoardQuery, families: AbstractSet[str]) -> str:
    headers, rows = selectors.metric_board(
        protocol_name=query.protocol, level=query.level, family=query.family, reference=query.reference
    )
    return render_to_string(
        "leaderboards/_metric_board.html",
        {
            "headers": headers,
            "rows": rows,
            "protocol": query.protocol,
            "protocols": selectors.PROTOCOLS,
            "level": query.level,
            "family": query.family,
            "families": sorted(families),
            "reference": query.reference,
        },
    )


# The scatter is a WebGL trace: plotly.js draws it with regl, which compiles its draw calls with
# Function(). This page alone allows that ('unsafe-eval'); inline script stays refused here too.
@csp_update({"script-src": ["'unsafe-eval'"]})  # type: ignore[arg-type]  # django-csp types a view as (request) only
def metric_detail(request: HttpRequest, slug: str) -> HttpResponse:
    metric = get_object_or_404(Metric.objects.select_related("current_version"), slug=slug)
    config_text = json.dumps(metric.current_version.config, indent=2, sort_keys=True) if metric.current_version else ""
    datasets = list(
        Dataset.objects.visible_to(request.user)
        .filter(correlations__metric_version__metric=metric)
        .distinct()
        .order_by("title")
    )
    chosen = next((d for d in datasets if d.slug == request.GET.get("dataset")), datasets[0] if datasets else None)
    results, figures = [], {}
    if chosen is not None:
        results = list(
            CorrelationResult.objects.filter(metric_version__metric=metric, dataset=chosen)
            .select_related("metric_version")
            .order_by("protocol", "level", "dimension", "statistic")
        )
        if chosen.kind == Dataset.Kind.RATING:
            data = selectors.metric_on_dataset(metric=metric, dataset=chosen)
            if data is not None and len(data.metric):
                figures = {
                    "scatter": charts.scatter(data),
                    "heatmap": charts.heatmap(data),
                    "distribution": charts.distribution(data),
                }
        else:
            categories = [
                (r.dimension, r.value, r.low, r.high)
                for r in results
                if r.statistic == "accuracy" and r.value is not None
            ]
            if categories:
                figures = {"categories": charts.category_bars(categories, metric.name)}
    return render(
        request,
        "leaderboards/metric_detail.html",
        {
            "metric": metric,
            "datasets": datasets,
            "dataset": chosen,
            "results": results,
            "figures": figures,
            "config_text": config_text,
        },
    )


def item_detail(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    item = get_object_or_404(
        Item.objects.select_related("media", "dataset"),
        pk=pk,
        dataset__slug=slug,
        dataset__in=Dataset.objects.visible_to(request.user),
    )
    return render(
        request,
        "leaderboards/item.html",
        {"page": item_page(item=item, viewer=request.user), "dataset": item.dataset, "item": item},
    )


def generated_picture(request: HttpRequest, key: str) -> FileResponse:
    """A picture a cycle metric generated from a caption, by its cache key (never a path), when a
    score of a caption the viewer may see refers to it."""
    name = picture_name(key)
    try:
        if name is None or not Score.objects.visible_to(request.user).filter(detail__generated_image=key).exists():
            raise FileNotFoundError(key)
        return FileResponse(storage.open_stored(name), content_type="image/png")
    except FileNotFoundError:
        raise Http404("no generated picture with this key") from None


def significance_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    result = get_object_or_404(
        SignificanceResult,
        dataset=dataset,
        protocol=request.GET.get("protocol", ""),
        dimension=request.GET.get("dimension", ""),
        statistic=request.GET.get("statistic", ""),
        level=request.GET.get("level", "caption"),
    )
    names = dict(Metric.objects.filter(slug__in=result.metrics).values_list("slug", "name"))
    rows = [
        {
            "slug": slug,
            "name": names.get(slug, slug),
            "value": value,
            "rank": rank,
            "p": [None if j <= i else result.p_values[i][j] for j in range(len(result.metrics))],
        }
        for i, (slug, value, rank) in enumerate(zip(result.metrics, result.values, result.ranks, strict=True))
    ]
    return render(
        request,
        "leaderboards/significance.html",
        {
            "dataset": dataset,
            "result": result,
            "rows": rows,
            "names": [names.get(slug, slug) for slug in result.metrics],
        },
    )


def board_json(dataset, columns, rows) -> dict:
    return {
        "dataset": dataset.slug,
        "metrics": [{"slug": c.slug, "name": c.name, "higher_is_better": c.higher_is_better} for c in columns],
        "systems": [
            {
                "system": row.system.slug,
                "name": row.system.name,
                "kind": row.system.kind,
                "baseline": row.system.is_baseline,
                "paper_url": getattr(row.submission, "paper_url", "") if row.submission else "",
                "code_url": getattr(row.submission, "code_url", "") if row.submission else "",
                "scores": {
                    slug: {
                        "value": cell.value,
                        "state": cell.state,
                        **({"note": cell.note} if cell.note else {}),
                        **({"low": cell.low, "high": cell.high} if cell.low is not None else {}),
                    }
                    for slug, cell in row.cells.items()
                },
            }
            for row in rows
        ],
    }


def _board_csv(dataset, columns, rows) -> HttpResponse:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(spreadsheet_row(["system", "name", "kind", "baseline", *[c.slug for c in columns]]))
    for row in rows:  # text cells neutralised against formula injection; scores written as numbers
        writer.writerow(
            spreadsheet_row(
                [
                    row.system.slug,
                    row.system.name,
                    row.system.kind,
                    row.system.is_baseline,
                    *[row.cells[c.slug].value for c in columns],
                ]
            )
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}-leaderboard.csv"'
    return response
