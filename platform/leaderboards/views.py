"""Board pages and their CSV/JSON downloads (thin: selectors build the tables)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Set as AbstractSet
from dataclasses import astuple

from csp.decorators import csp_update
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from campaigns.models import Campaign
from capbench import limits, storage
from catalog.citations import bib_response
from catalog.models import Dataset, Item, System
from catalog.selectors import chosen_subset, item_subsets
from catalog.visibility import references_visible
from leaderboards import charts, comparison, disagreements, index, rendering, selectors
from leaderboards.badges import anonymous_visible, badge_response, board_badge, system_badge_snippet
from leaderboards.caching import conditional_board, conditional_response, kept_fragment, page_validator
from leaderboards.citations import metric_bibtex
from leaderboards.exports import board_csv_text, board_json
from leaderboards.items import item_page
from leaderboards.subsets import subset_kept, subset_payload
from leaderboards.systems import system_page
from scoring.models import CorrelationResult, Metric, Score, SignificanceResult
from scoring.services.pictures import picture_name
from workbench.selectors import private_metric_slugs, submitted_metric


@require_safe
@conditional_board
def captioner_board(
    request: HttpRequest, dataset: Dataset, *, visible: AbstractSet[int], payload: dict
) -> HttpResponse:
    query = selectors.captioner_board_params(request.GET)
    subset = chosen_subset(request.GET, dataset)
    if subset is not None:  # nocaps' domains: every number again over that subset's images
        kept = subset_kept(dataset, payload, subset)
        if kept is None:  # a bootstrap per cell: counted like comparisons
            decision = limits.hit("comparisons", f"address:{limits.client_address(request)}")
            if not decision.allowed:
                return limits.too_many(request, decision, "board computations")
        payload = kept if kept is not None else subset_payload(dataset, payload, subset)
    board = selectors.captioner_board_shown(dataset, request.GET, viewer=request.user, visible=visible, payload=payload)
    columns, rows, sort = board.columns, board.rows, board.sort
    download = request.GET.get("download")
    staff = request.user.is_staff
    people = payload.get("people") if any(row.people for row in rows) else None
    campaign = payload.get("people_campaign") if people else None
    if download == "json":
        return JsonResponse(
            board_json(dataset, columns, rows, staff=staff, people=people, people_campaign=campaign, subset=subset),
            json_dumps_params={"indent": 1},
        )
    if download == "csv":
        return _board_csv(dataset, columns, rows, people=people, people_campaign=campaign, subset=subset)
    best_first = True
    if sort is not None and query.descending is not None:
        higher = True if sort == selectors.PEOPLE else next(c.higher_is_better for c in columns if c.slug == sort)
        best_first = query.descending == higher
    groups, empty = selectors.column_groups(columns, rows, keep=sort)
    # What people said leads where most systems have it (a human-evaluation board), else follows the metrics.
    people_first = bool(people) and 2 * sum(1 for row in rows if row.people) > len(rows)
    shown = [column for group in groups for column in group.columns]
    params = {"q": query.search, "only": query.only or "", "domain": subset or ""}
    sort_name = "people" if sort == selectors.PEOPLE else next((c.name for c in columns if c.slug == sort), "")
    return render(
        request,
        "leaderboards/captioner.html",
        {
            "dataset": dataset,
            "groups": groups,
            "empty": empty,
            "rows": rows,
            "query": query,
            "filters": selectors.FILTERS,
            "sort_name": sort_name,
            "best_first": best_first,
            "people": people,
            "people_campaign": campaign,
            "people_header": rendering.people_header(
                people, sort=sort, best_first=best_first, query=params, campaign=campaign
            )
            if people
            else None,
            "headers": rendering.headers(shown, empty, sort=sort, best_first=best_first, query=params),
            "people_first": people_first,
            "table_rows": rendering.board_rows_html(
                shown,
                empty,
                rows,
                people=None if not people else "first" if people_first else "last",
                staff=staff,
                dataset_slug=dataset.slug,
            ),
            "compare_default": _compare_default(rows),
            "subsets": item_subsets(dataset),
            "subset": subset,
        },
    )


def _compare_default(rows: list[selectors.BoardRow]) -> tuple[str, str] | None:
    """The board's top system and its best baseline (else its second system), to compare."""
    if len(rows) < 2:
        return None
    top = rows[0]
    other = next((row for row in rows[1:] if row.system.is_baseline), rows[1])
    return top.system.slug, other.system.slug


@require_safe
def metric_board(request: HttpRequest) -> HttpResponse:
    """The same table for every viewer (public datasets and metrics): rendered once per version of
    what it is read from and per query, then wrapped in the viewer's page. A viewer who may see
    submitted metrics the public may not (their own unpublished ones; staff) gets a table of their own,
    never kept."""
    version = selectors.metric_board_version()
    query = selectors.metric_board_query(request.GET, families=version.families)
    extra = private_metric_slugs(request.user)
    if extra:
        board = _metric_board_html(query, version.families, extra=extra)
        digest = hashlib.sha256(board.encode()).hexdigest()
    else:
        board, digest = kept_fragment(
            "metric-board", version.key, astuple(query), lambda: _metric_board_html(query, version.families)
        )
    page = mark_safe(board)  # noqa: S308  (our template's output)
    return conditional_response(
        request,
        page_validator(request, digest),
        lambda: (render(request, "leaderboards/metrics.html", {"board": page}), True),
    )


def _metric_board_html(
    query: selectors.MetricBoardQuery, families: AbstractSet[str], *, extra: AbstractSet[str] = frozenset()
) -> str:
    headers, rows = selectors.metric_board(
        protocol_name=query.protocol, level=query.level, family=query.family, reference=query.reference, extra=extra
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
    submitted = submitted_metric(metric=metric, viewer=request.user)
    config_text = json.dumps(metric.current_version.config, indent=2, sort_keys=True) if metric.current_version else ""
    datasets = list(
        Dataset.objects.visible_to(request.user)
        .filter(correlations__metric_version__metric=metric)
        .distinct()
        .order_by("title")
    )
    chosen = next((d for d in datasets if d.slug == request.GET.get("dataset")), datasets[0] if datasets else None)
    results: list[CorrelationResult] = []
    campaigns: dict[str, Campaign] = {}
    figures: dict[str, str] = {}
    if chosen is not None:
        results, campaigns = selectors.metric_correlations(metric=metric, dataset=chosen)
        charted = references_visible(chosen, request.user)  # a hidden test set's ratings: staff only
        if chosen.kind == Dataset.Kind.RATING and charted:
            # One dimension of the human judgments (THumB's total, not its precision, recall and total mixed).
            dimension = chosen.people_dimension

            version = selectors.metric_charted_version(metric=metric, dataset=chosen)

            def build() -> str:
                data = selectors.metric_on_dataset(metric=metric, dataset=chosen, dimension=dimension, version=version)
                if data is None or not len(data.metric):
                    return "{}"
                return json.dumps(
                    {
                        "scatter": charts.scatter(data, dimension=dimension),
                        "heatmap": charts.heatmap(data, dimension=dimension),
                        "distribution": charts.distribution(data),
                    }
                )

            # Read from every score and judgment of the dataset (130,000 each on the largest): built
            # once per change of the results (their revision moves when the scores behind them
            # change), not per request (docs/performance.md).
            kept, _ = kept_fragment(
                "metric-figures",
                selectors.metric_board_version().key,
                # The version read (its job is done after its results are written); a re-import moves updated_at.
                [metric.pk, version and version.pk, chosen.pk, chosen.updated_at.isoformat(), dimension],
                build,
            )
            figures = json.loads(kept)
        elif chosen.kind != Dataset.Kind.RATING:  # pair accuracy by category: aggregates, for everyone
            categories = [
                (r.dimension, r.value, r.low, r.high)
                for r in results
                if r.statistic == "accuracy" and r.value is not None and r.protocol not in campaigns
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
            "charts_shown": chosen is not None and references_visible(chosen, request.user),
            "results": results,
            "campaigns": campaigns,
            "figures": figures,
            "config_text": config_text,
            "submitted": submitted,
            "trained_on": {c.dataset.pk for c in submitted.checks if c.trained_on} if submitted else set(),
            "is_owner": submitted is not None and request.user.pk == submitted.submission.owner_id,
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
    try:
        found = disagreements.metric_disagreements(
            metric=metric,
            viewer=request.user,
            dataset=request.GET.get("dataset"),
            dimension=request.GET.get("dimension"),
            page=number,
            metrics=Metric.objects.listed().visible_to(request.user),
        )
    except Dataset.DoesNotExist:
        raise Http404("no such dataset") from None
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
    # `?metric=` a private submitted metric the viewer may see: its own clusters (the public metrics and it).
    subject = Metric.objects.visible_to(request.user).filter(
        slug=request.GET.get("metric", ""), submission__isnull=False
    )
    own = SignificanceResult.objects.filter(subject__in=subject)
    results = own if own.filter(dataset=dataset).exists() else SignificanceResult.objects.filter(subject__isnull=True)
    results = results.filter(dataset=dataset, level=request.GET.get("level", "caption"))
    if not any(request.GET.get(name) for name in ("protocol", "dimension", "statistic")):
        # The dataset's default page (the dataset list links here): its first clusters (its own
        # protocols' before a live campaign's), or a page saying there are none yet.
        ordered = results.order_by("protocol", "dimension", "statistic")
        result = ordered.exclude(protocol_name="live").first() or ordered.first()
        if result is None:
            return render(request, "leaderboards/significance.html", {"dataset": dataset, "result": None})
    else:
        result = get_object_or_404(
            results,
            protocol=request.GET.get("protocol", ""),
            dimension=request.GET.get("dimension", ""),
            statistic=request.GET.get("statistic", ""),
        )
    names = dict(Metric.objects.visible_to(request.user).filter(slug__in=result.metrics).values_list("slug", "name"))
    # A metric hidden or withdrawn since the clusters were computed is left out until they are again.
    shown = [i for i, slug in enumerate(result.metrics) if slug in names]
    result.metrics = [result.metrics[i] for i in shown]
    result.values = [result.values[i] for i in shown]
    result.ranks = [result.ranks[i] for i in shown]
    result.p_values = [[result.p_values[i][j] for j in shown] for i in shown]
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


def _board_csv(
    dataset, columns, rows, *, people: str | None = None, people_campaign: dict | None = None, subset: str | None = None
) -> HttpResponse:
    board = board_json(dataset, columns, rows, people=people, people_campaign=people_campaign, subset=subset)
    response = HttpResponse(board_csv_text(board), content_type="text/csv; charset=utf-8")
    name = f"{dataset.slug}-{subset}" if subset else dataset.slug  # (a subset is one of the dataset's own values)
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
    """Two systems side by side (`?a=&b=` system slugs): the paired difference per metric and the
    images where they differ most or where a metric disagrees with people. A comparison not kept
    from an earlier request runs a bootstrap: those are counted per address
    (settings.CAPBENCH_RATES["comparisons"])."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    choices = list(
        System.objects.visible_to(request.user)
        .ranked()
        .filter(dataset=dataset)
        .order_by("name")
        .values_list("slug", "name")
    )
    a, b = request.GET.get("a"), request.GET.get("b")
    context: dict = {"dataset": dataset, "choices": choices, "a": a, "b": b, "orders": comparison.EXPLORER_ORDERS}
    if not (a or b):
        return render(request, "leaderboards/compare.html", context)
    try:
        first, second = comparison.systems_for_comparison(dataset, a, b, request.user)
    except comparison.SystemsNotComparable as error:
        context["problem"] = str(error)
        return render(request, "leaderboards/compare.html", context, status=400)
    for system in (first, second):  # a caption source the board does not rank can still be compared
        if system.slug not in {slug for slug, _ in choices}:
            choices.append((system.slug, system.name))
    inputs = comparison.comparison_inputs(dataset, first, second)
    found = comparison.comparison_kept(inputs)
    if found is None:
        decision = limits.hit("comparisons", f"address:{limits.client_address(request)}")
        if not decision.allowed:
            return limits.too_many(request, decision, "comparisons")
        found = comparison.comparison(inputs)
    asked = request.GET.get("order", "")
    order = asked if asked in comparison.EXPLORER_ORDERS else "differ"
    try:
        number = int(request.GET.get("page", "1"))
    except ValueError:
        number = 1
    # A hidden test set (for all but staff): no references, no per-image ratings, only reference-free
    # metrics per image in the explorer; the differences above are system-level and shown.
    shown = references_visible(dataset, request.user)
    people = comparison.people_by_image(found) if shown else {}
    chosen = comparison.explorer_metric(found, request.GET.get("metric"), reference_free_only=not shown)
    images, ranked, pages = comparison.explored_images(
        found, order=order, metric=chosen, page=number, people=people, reference_free_only=not shown
    )
    context.update(
        found=found,
        compared=[m for m in found.metrics if m.difference is not None],
        not_compared=[m for m in found.metrics if m.difference is None],
        rated_images=len(people),
        images=images,
        ranked=ranked,
        pages=pages,
        page_number=min(max(number, 1), pages),
        order=order,
        explore_metric=next((m.column for m in found.metrics if m.column.slug == chosen), None),
        references_shown=shown,
        explorable=comparison.explorable_columns(found, reference_free_only=not shown),
    )
    return render(request, "leaderboards/compare.html", context)
