"""HTTP caching of the captioner boards: `ETag` and `Last-Modified` from the board's snapshot, a 304
to a conditional request before any table is built, and anonymous responses kept whole in the cache
(Valkey) until the snapshot changes.

The validator covers everything a board response depends on: the snapshot (rebuilt when a job of
the dataset ends or a submission's visibility changes), the systems this viewer may see (read live,
once per request: the board is built from the same set), the viewer (the page names them and may
show their private rows), the query string and the templates. Responses for a signed-in viewer are `private`: a shared cache never
stores them; every response varies on Cookie and Authorization."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers
from django.utils.http import http_date

from catalog.models import Dataset
from leaderboards.models import BoardSnapshot
from leaderboards.selectors import systems_visible
from leaderboards.snapshots import board_payload


class BoardRequest(Protocol):
    """A Django request, or a REST framework one (whose `user` is the token's)."""

    user: Any
    method: str | None

    def get_full_path(self) -> str: ...


R = TypeVar("R", bound=HttpResponse)
KEPT_SECONDS = 24 * 3600  # an anonymous response's life in the cache at most (a new snapshot misses it sooner)
PREFIX = "board-response:"


@functools.cache
def templates_digest() -> str:
    """The templates' content: a deployment that changes a page changes every validator."""
    digest = hashlib.sha256()
    engine: dict[str, Any] = settings.TEMPLATES[0]
    for folder in engine["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot_time(dataset: Dataset) -> datetime:
    computed = BoardSnapshot.objects.filter(dataset=dataset).values_list("computed_at", flat=True).first()
    if computed is None:
        board_payload(dataset)  # builds and stores the first snapshot
        computed = BoardSnapshot.objects.filter(dataset=dataset).values_list("computed_at", flat=True).get()
    return computed


def board_validators(request: BoardRequest, dataset: Dataset, visible: AbstractSet[int]) -> tuple[str, datetime]:
    """(ETag, Last-Modified) of the board response this request gets; `visible`: the ids of the
    systems this viewer may see (selectors.systems_visible), read once per request and passed on to
    the board as well."""
    computed = snapshot_time(dataset)
    user = request.user
    viewer = f"user:{user.pk}" if user.is_authenticated else "anonymous"
    raw = json.dumps(
        [
            templates_digest(),
            dataset.pk,
            dataset.slug,
            computed.isoformat(),
            sorted(visible),
            viewer,
            request.get_full_path(),
        ]
    )
    return f'"{hashlib.sha256(raw.encode()).hexdigest()[:32]}"', computed


def board_headers(response: R, request: BoardRequest, etag: str, modified: datetime) -> R:
    response["ETag"] = etag
    response["Last-Modified"] = http_date(modified.timestamp())
    patch_vary_headers(response, ["Cookie", "Authorization"])
    if request.user.is_authenticated:
        patch_cache_control(response, private=True, no_cache=True)
    else:
        patch_cache_control(response, public=True, no_cache=True)
    return response


def not_modified(request: HttpRequest, etag: str) -> HttpResponse | None:
    """A 304 when If-None-Match names this ETag. The ETag alone decides: Last-Modified is the
    snapshot's time, which a change of who may see a row does not move, so If-Modified-Since
    without an ETag always gets the whole response."""
    return get_conditional_response(request, etag=etag)


def conditional_board(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a view `(request, dataset, ..., visible=None)`: 304 when the client's copy is current;
    anonymous 200s served from and kept in the cache under their validator. The view is passed the
    visible systems the validator read (`visible`), so the board does not read them again."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, dataset: Dataset, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return view(request, dataset, *args, **kwargs)
        visible = systems_visible(dataset, request.user)
        etag, modified = board_validators(request, dataset, visible)
        unchanged = not_modified(request, etag)
        if unchanged is not None:
            return board_headers(unchanged, request, etag, modified)
        anonymous = not request.user.is_authenticated
        kept = cache.get(PREFIX + etag) if anonymous else None
        if kept is not None:
            response = HttpResponse(kept["content"], content_type=kept["type"])
            if kept.get("disposition"):
                response["Content-Disposition"] = kept["disposition"]
            return board_headers(response, request, etag, modified)
        response = view(request, dataset, *args, visible=visible, **kwargs)
        if anonymous and response.status_code == 200 and not response.streaming:
            kept = {"content": response.content, "type": response["Content-Type"]}
            if response.has_header("Content-Disposition"):
                kept["disposition"] = response["Content-Disposition"]
            cache.set(PREFIX + etag, kept, KEPT_SECONDS)
        return board_headers(response, request, etag, modified)

    return wrapper
