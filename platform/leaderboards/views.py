"""Board pages and their CSV/JSON downloads (thin: selectors build the tables)."""

from __future__ import annotations

from collections.abc import Set as AbstractSet

from csp.decorators import csp_update
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from catalog.citations import bib_response
from catalog.models import Dataset, Item, System
from catalog.selectors import item_subsets
from leaderboards import disagreements, index, rendering
from leaderboards.badges import anonymous_visible, badge_response, board_badge, system_badge_snippet
from leaderboards.caching import conditional_response, page_validator
from leaderboards.captioner import CaptionerBoardPage
from leaderboards.citations import metric_bibtex
from leaderboards.compare_page import ComparePage, compare_page, comparison_choices, comparison_for
from leaderboards.comparison import systems_for_comparison
from leaderboards.exports import board_csv_text, board_json
from leaderboards.home import home_page
from leaderboards.items import item_page
from leaderboards.metric_board import BY_NAME, PROTOCOLS, MetricBoardPage, metric_board_query, metric_board_version
from leaderboards.metric_page import metric_page
from leaderboards.responses import captioner_board_response, metric_board_text
from leaderboards.significance import significance_page
from leaderboards.systems import system_page
from plumbing import storage
from plumbing.refusals import FormPage
from scoring.models import Metric, Score
from scoring.services.pictures import picture_name
from workbench.selectors import private_metric_slugs


@require_safe
def captioner_board(request: HttpRequest, slug: str) -> HttpResponse:
    """The board as the viewer may see it (`?sort=&order=&q=&only=&domain=`), or its `?download=`
    JSON or CSV: the one page model (captioner.CaptionerBoardPage), rendered."""
    staff = request.user.is_staff

    def render_page(page: CaptionerBoardPage) -> HttpResponse:
        download = request.GET.get("download")
        if download == "json":
            return JsonResponse(board_json(page, staff=staff), json_dumps_params={"indent": 1})
        if download == "csv":
            return board_csv_response(page)
        context = rendering.board_context(page, staff=staff, subsets=item_subsets(page.dataset))
        return render(request, "leaderboards/captioner.html", context)

    return captioner_board_response(request, slug, render_page)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """What CapBench is and what is best on it (home.home_page), then the datasets."""
    return render(request, "catalog/home.html", {"page": home_page(request.user)})


@require_safe
def metric_board(request: HttpRequest) -> HttpResponse:
    """The same table for every viewer (public datasets and metrics), ranked by `?sort=` (a column's
    key, a dataset's slug or "metric"; another: the default, the first dataset's headline column)
    and `?order=`: rendered once per version of what it is read from and per resolved query, then
    wrapped in the viewer's page. A viewer who may see submitted metrics the public may not (their
    own unpublished ones; staff) gets a table of their own, never kept."""
    version = metric_board_version()
    query = metric_board_query(request.GET, families=version.families)
    board, digest = metric_board_text(
        "metric-board",
        version.key,
        query,
        lambda page: _metric_board_html(page, version.families),
        extra=private_metric_slugs(request.user),
    )
    page = mark_safe(board)  # noqa: S308  (our template's output)
    return conditional_response(
        request,
        page_validator(request, digest),
        lambda: (render(request, "leaderboards/metrics.html", {"board": page}), True),
    )


def _metric_board_html(page: MetricBoardPage, families: AbstractSet[str]) -> str:
    query = page.query
    return render_to_string(
        "leaderboards/_metric_board.html",
        {
            "page": page,
            "headers": page.sort_links(),
            "name_link": page.sort_link(BY_NAME),
            "rows": page.rows,
            "protocol": query.protocol,
            "protocols": PROTOCOLS,
            "level": query.level,
            "family": query.family,
            "families": sorted(families),
            "reference": query.reference,
            # The same for every viewer (it is kept with the table): plain words, nothing staff-only.
            "without": index.metrics_without_numbers(family=query.family, reference=query.reference),
        },
    )


@require_safe
def metric_index(request: HttpRequest) -> HttpResponse:
    """Every metric: family, references, whether this site computes it, version, datasets, cost."""
    metrics = Metric.objects.listed().visible_to(request.user)
    return render(
        request, "leaderboards/metric_index.html", {"rows": index.metric_index(request.user, metrics=metrics)}
    )


# The scatter is a WebGL trace: plotly.js draws it with regl, which compiles its draw calls with
# Function(). This page alone allows that ('unsafe-eval'); inline script stays refused here too.
@csp_update({"script-src": ["'unsafe-eval'"]})  # type: ignore[arg-type]  # django-csp types a view as (request) only
def metric_detail(request: HttpRequest, slug: str) -> HttpResponse:
    metric = get_object_or_404(Metric.objects.visible_to(request.user).select_related("current_version"), slug=slug)
    page = metric_page(metric=metric, viewer=request.user, dataset_slug=request.GET.get("dataset"))
    return render(
        request,
        "leaderboards/metric_detail.html",
        {
            "page": page,
            "metric": metric,
            "datasets": page.datasets,
            "dataset": page.dataset,
            "charts_shown": page.charts_shown,
            "results": page.results,
            "campaigns": page.campaigns,
            "figures": page.figures,
            "config_text": page.config_text,
            "submitted": page.submitted,
            "trained_on": page.trained_on,
            "is_owner": page.is_owner,
            "bibtex": metric_bibtex(metric),
        },
    )


@require_safe
def metric_cite_bib(request: HttpRequest, slug: str) -> HttpResponse:
    """The metric's citation as a .bib file (404 where its page is)."""
    metric = get_object_or_404(Metric.objects.visible_to(request.user).select_related("submission__owner"), slug=slug)
    return bib_response(metric_bibtex(metric), metric.slug)


@require_safe
def metric_disagreements(request: HttpRequest, slug: str) -> HttpResponse:
    """The items where the metric orders the captions against people (`?dataset=&dimension=&page=`):
    an unknown dimension or page falls back, a dataset the viewer may not see is 404."""
    metric = get_object_or_404(Metric.objects.visible_to(request.user), slug=slug)
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        number = 1
    found = disagreements.metric_disagreements(  # a dataset the viewer may not see: NotFound, a 404
        metric=metric,
        viewer=request.user,
        dataset=request.GET.get("dataset"),
        dimension=request.GET.get("dimension"),
        page=number,
        metrics=Metric.objects.listed().visible_to(request.user),
    )
    return render(request, "leaderboards/disagreements.html", {"metric": metric, "found": found})


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
        {
            "page": item_page(item=item, viewer=request.user, number=request.GET.get("page")),
            "dataset": item.dataset,
            "item": item,
        },
    )


def generated_picture(request: HttpRequest, key: str) -> FileResponse:
    """A picture a cycle metric generated from a caption, by its cache key (never a path), when a
    score of a caption the viewer may see refers to it."""
    name = picture_name(key)
    try:
        if name is None or not Score.objects.visible_to(request.user).naming_picture(key).exists():
            raise FileNotFoundError(key)
        return FileResponse(storage.open_stored(name), content_type="image/png")
    except FileNotFoundError:
        raise Http404("no generated picture with this key") from None


def significance_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    page = significance_page(dataset, request.user, request.GET)  # NoSuchColumn: 404
    return render(
        request,
        "leaderboards/significance.html",
        {"dataset": dataset, "result": page.result, "rows": page.rows, "names": page.names},
    )


def board_csv_response(page: CaptionerBoardPage) -> HttpResponse:
    response = HttpResponse(board_csv_text(board_json(page)), content_type="text/csv; charset=utf-8")
    name = f"{page.dataset.slug}-{page.subset}" if page.subset else page.dataset.slug  # (one of its own subsets)
    response["Content-Disposition"] = f'attachment; filename="{name}-leaderboard.csv"'
    return response


def system_detail(request: HttpRequest, slug: str, system: str) -> HttpResponse:
    """One system of a board as the viewer may see it: what it is, who submitted it and when, and
    every number of the board with its interval and rank among the systems the viewer sees."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    found = get_object_or_404(
        System.objects.visible_to(request.user).select_related("submission__owner"), dataset=dataset, slug=system
    )
    page = system_page(dataset, found, viewer=request.user)
    snippet = system_badge_snippet(dataset, found) if page.row is not None else None
    return render(request, "leaderboards/system.html", {"dataset": dataset, "page": page, "badge": snippet})


@require_safe
def system_badge(request: HttpRequest, slug: str, system: str, metric: str | None = None) -> HttpResponse:
    """A README badge (SVG) of a system on the board for `metric` (default: the dataset's headline
    metric): 404 for a dataset, system or metric the viewer may not see, or a system the board
    does not rank (a withdrawn one, a caption source); "no score yet" where it has no number."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    found = get_object_or_404(System.objects.visible_to(request.user).ranked(), dataset=dataset, slug=system)
    chosen = get_object_or_404(Metric.objects.visible_to(request.user), slug=metric or dataset.headline_metric)
    return badge_response(request, board_badge(dataset, found, chosen, public_ids=anonymous_visible(dataset)))


def compare(request: HttpRequest, slug: str) -> HttpResponse:
    """Two systems side by side (`?a=&b=` system slugs): each one's numbers as the board shows them,
    the paired difference per metric and the images where they differ most or where a metric
    disagrees with people (compare_page)."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    a, b = request.GET.get("a"), request.GET.get("b")
    page = ComparePage(dataset, comparison_choices(dataset, request.user), a, b)
    if not (a or b):
        page.a, page.b = page.default_pair()
        return render(request, "leaderboards/compare.html", {"page": page, "dataset": dataset})
    refused = FormPage(request, "leaderboards/compare.html", {"page": page, "dataset": dataset})
    with refused.refusals():
        first, second = systems_for_comparison(dataset, a, b, request.user)
        found = comparison_for(request, dataset, first, second)
        if isinstance(found, HttpResponse):
            return found
        page.found = found
        page = compare_page(page, request.GET, viewer=request.user)
        return render(request, "leaderboards/compare.html", {"page": page, "dataset": dataset})
    return refused.response()
