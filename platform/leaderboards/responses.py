"""A captioner board request answered one way for every surface that serves it: the page and its
CSV/JSON downloads, the API in JSON, CSV and its browsable form. The dataset and the viewer's
systems are read once (requests.board_request_state); a conditional request gets its 304 before any
table is built (caching); a subset's board not built before is a bootstrap per cell, counted against
the address's rate of such computations; then the one page model (captioner.CaptionerBoardPage) is
built and handed to the surface's `render`. The metric board's page and API render its one page
model (metric_board.MetricBoardPage) the same way, through `metric_board_text`."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import astuple, replace
from typing import cast

from django.http import Http404, HttpRequest, HttpResponse

from catalog.models import Dataset
from catalog.selectors import chosen_subset
from leaderboards.caching import BoardRequest, board_validators, conditional_response, kept_fragment, searched
from leaderboards.captioner import CaptionerBoardPage, captioner_board_page
from leaderboards.metric_board import (
    MetricBoardPage,
    MetricBoardQuery,
    metric_board_of,
    metric_board_page,
    resolve_sort,
    sort_choices,
)
from leaderboards.requests import board_request_state
from leaderboards.snapshots import board_payload
from leaderboards.subsets import subset_kept, subset_payload
from plumbing import limits


def captioner_board_response(
    request: BoardRequest,
    slug: str,
    render: Callable[[CaptionerBoardPage], HttpResponse],
    *,
    variant: str = "",
    api: bool = False,
    keep: bool = True,
) -> HttpResponse:
    """The response of `render(page)` for the board of the dataset `slug` as this request's viewer
    may see it (404 for a dataset they may not), under the board's validator (`variant`: what else
    the response depends on, the API's format). An anonymous response is kept whole unless `keep`
    is false or the request searches."""
    try:
        state = board_request_state(slug, request.user)
    except Dataset.DoesNotExist:
        raise Http404("no such dataset") from None
    etag = board_validators(request, state, variant=variant, api=api)
    subset = chosen_subset(request.GET, state.dataset)
    http = cast(HttpRequest, getattr(request, "_request", request))  # (a REST framework request wraps Django's)

    def respond() -> tuple[HttpResponse, bool]:
        payload, built = board_payload(state.dataset, with_version=True)
        if subset is not None:
            kept = subset_kept(state.dataset, payload, subset)
            if kept is None:  # a bootstrap per cell: counted like comparisons
                decision = limits.hit("comparisons", f"address:{limits.client_address(http)}")
                if not decision.allowed:
                    return limits.too_many(http, decision, "board computations"), False
                kept = subset_payload(state.dataset, payload, subset)
            payload = kept
        page = captioner_board_page(
            state.dataset, request.GET, viewer=request.user, visible=state.visible, payload=payload, subset=subset
        )
        return render(page), built is not None and built == state.version

    return conditional_response(http, etag, respond, keep=keep and not searched(request))


def metric_board_text(
    name: str,
    version: str,
    query: MetricBoardQuery,
    render: Callable[[MetricBoardPage], str],
    *,
    extra: AbstractSet[str] = frozenset(),
    strict: bool = False,
) -> tuple[str, str]:
    """`render(page)` of the metric board for `query` and its digest (the page's table, the API's
    JSON: `name`), kept under the board's `version` and the query as the board resolves it, so that
    a made-up `sort` is kept as the default it reads as (or, `strict`, metric_board.UnknownSort). The
    columns a sort may name are kept too; the board is built once, on a miss. A viewer with
    private metrics in `extra` gets a board of their own, never kept."""
    if extra:
        text = render(metric_board_page(query, extra=extra, strict=strict))
        return text, hashlib.sha256(text.encode()).hexdigest()
    unsorted = replace(query, sort=None, order=None)
    board = functools.cache(lambda: metric_board_of(unsorted))
    choices, _ = kept_fragment(
        "metric-board-sorts", version, astuple(unsorted), lambda: json.dumps(sort_choices(board()[0]))
    )
    resolved = resolve_sort(query, json.loads(choices), strict=strict)
    return kept_fragment(name, version, astuple(resolved), lambda: render(metric_board_page(resolved, board=board())))
