"""HTTP caching of the captioner boards: an `ETag` of what the viewer is shown, a 304 to a
conditional request before any table is built, and anonymous responses kept whole in the cache
(Valkey) under their ETag.

The validator covers everything a board response depends on: the columns and the rows of the
snapshot this viewer may see (visibility read live, once per request: the board is built from the
same set), the viewer (the page names them and may show their private rows), the query string and
the templates. Nothing hidden moves it, so it tells no one that private work happened. Responses
for a signed-in viewer are `private`: a shared cache never stores them; every response varies on
Cookie and Authorization."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

from catalog.models import Dataset
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


def board_validators(request: BoardRequest, dataset: Dataset, visible: AbstractSet[int]) -> str:
    """The ETag of the board response this request gets; `visible`: the ids of the systems this
    viewer may see (selectors.systems_visible), read once per request and passed on to the board.

    Made from what the viewer is shown (the columns and the visible rows of the snapshot), never
    from the snapshot's time: a private submission being scored rebuilds the snapshot, and a
    validator that moved with it would tell anyone watching that something hidden happened."""
    payload = board_payload(dataset)
    shown = [row for row in payload["rows"] if row["system"]["id"] in visible]
    user = request.user
    viewer = f"user:{user.pk}" if user.is_authenticated else "anonymous"
    raw = json.dumps(
        [templates_digest(), dataset.pk, dataset.slug, payload["columns"], shown, viewer, request.get_full_path()],
        sort_keys=True,
        default=str,
    )
    return f'"{hashlib.sha256(raw.encode()).hexdigest()[:32]}"'


def board_headers(response: R, request: BoardRequest, etag: str) -> R:
    """No Last-Modified: the only time at hand is the snapshot's, which private work moves."""
    response["ETag"] = etag
    patch_vary_headers(response, ["Cookie", "Authorization"])
    if request.user.is_authenticated:
        patch_cache_control(response, private=True, no_cache=True)
    else:
        patch_cache_control(response, public=True, no_cache=True)
    return response


def not_modified(request: HttpRequest, etag: str) -> HttpResponse | None:
    """A 304 when If-None-Match names this ETag (If-Modified-Since alone always gets the whole
    response: the boards send no Last-Modified)."""
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
        etag = board_validators(request, dataset, visible)
        unchanged = not_modified(request, etag)
        if unchanged is not None:
            return board_headers(unchanged, request, etag)
        anonymous = not request.user.is_authenticated
        kept = cache.get(PREFIX + etag) if anonymous else None
        if kept is not None:
            response = HttpResponse(kept["content"], content_type=kept["type"])
            if kept.get("disposition"):
                response["Content-Disposition"] = kept["disposition"]
            return board_headers(response, request, etag)
        response = view(request, dataset, *args, visible=visible, **kwargs)
        if anonymous and response.status_code == 200 and not response.streaming:
            kept = {"content": response.content, "type": response["Content-Type"]}
            if response.has_header("Content-Disposition"):
                kept["disposition"] = response["Content-Disposition"]
            cache.set(PREFIX + etag, kept, KEPT_SECONDS)
        return board_headers(response, request, etag)

    return wrapper
