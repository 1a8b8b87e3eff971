"""HTTP caching of the boards: an `ETag` of what the viewer is shown, a 304 to a conditional
request before any table is built, and anonymous responses kept whole in the cache (Valkey) under
their ETag.

A captioner board's validator covers everything its response depends on: the columns and the rows
of the snapshot this viewer may see (visibility read live, once per request: the board is built
from the same set), the viewer (the page names them and may show their private rows), the query
string and the deployment (templates and code). Nothing hidden moves it, so it tells no one that
private work happened. Working it out reads the whole snapshot, so it is remembered under what it
was worked out from (the snapshot's version, the visible ids, the viewer, the query): a request
whose inputs are unchanged reads three small rows and two cache keys, and builds nothing.

The metric board depends on no viewer (it shows public datasets' results only): its table is kept
under a fingerprint of the tables it is read from (`selectors.metric_board_version`), and its
validator is the table's digest.

Responses for a signed-in viewer are `private`: a shared cache never stores them; every response
varies on Cookie and Authorization. No Last-Modified: the only times at hand are the snapshots',
which private work moves."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

from catalog.models import Dataset
from leaderboards.selectors import BoardRequestState, board_request_state
from leaderboards.snapshots import board_payload


class BoardRequest(Protocol):
    """A Django request, or a REST framework one (whose `user` is the token's)."""

    user: Any
    method: str | None
    path: str
    COOKIES: Any
    GET: Any

    def get_full_path(self) -> str: ...


R = TypeVar("R", bound=HttpResponse)
KEPT_SECONDS = 24 * 3600  # a kept response's or validator's life in the cache at most (new inputs miss it sooner)
PREFIX = "board-response:"  # + ETag: an anonymous response, whole
VALIDATOR_PREFIX = "board-etag:"  # + digest of the inputs: the captioner board validator they give


class Kept:
    """A process's own bounded copy of immutable cache entries (least recently used out first).

    Only for keys whose value never changes once written (an ETag's response, the validator of a
    given set of inputs): a copy here is never stale, and a hit costs no round trip to Valkey.
    Valkey stays the level shared between processes."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return None
            self.entries.move_to_end(key)
            return found[0]

    def put(self, key: str, value: Any, size: int) -> None:
        if size > self.max_bytes // 4:  # one entry never pushes out most of the rest
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = (value, size)
            self.size += size
            while self.size > self.max_bytes:
                _, (_, freed) = self.entries.popitem(last=False)
                self.size -= freed

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


KEPT_HERE = Kept(settings.PAGE_MEMORY_BYTES)


def kept_get(key: str) -> Any:
    """From this process's copy, else from Valkey (then kept here too)."""
    value = KEPT_HERE.get(key)
    if value is None:
        value = cache.get(key)
        if value is not None:
            KEPT_HERE.put(key, value, _size(value))
    return value


def kept_set(key: str, value: Any) -> None:
    cache.set(key, value, KEPT_SECONDS)
    KEPT_HERE.put(key, value, _size(value))


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return sum(len(part) for part in value.values() if isinstance(part, bytes | str)) + 200
    if isinstance(value, tuple):
        return sum(len(part) for part in value if isinstance(part, str)) + 200
    return len(value) + 200 if isinstance(value, str) else 200


@functools.cache
def deployment_digest() -> str:
    """The templates and the Python code of this deployment: changing a page, or how a board is
    built, changes every validator. Read once per process."""
    digest = hashlib.sha256()
    engine: dict[str, Any] = settings.TEMPLATES[0]
    folders = [(Path(folder), "*.html") for folder in engine["DIRS"]]
    code = Path(__file__).resolve().parents[1]  # platform/
    folders += [(code, "*.py"), (code.parent / "evaluation", "*.py")]
    for folder, pattern in folders:
        for path in sorted(folder.rglob(pattern)):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:32]


def viewer_key(request: BoardRequest) -> str:
    """Whom a response is for: "anonymous", or the account and its CSRF secret (a signed-in page
    carries a token from it; signing in again makes a new one, and an old copy must not come back)."""
    user = request.user
    if not user.is_authenticated:
        return "anonymous"
    return f"user:{user.pk}:{_digest(request.COOKIES.get(settings.CSRF_COOKIE_NAME, ''))[:12]}"


# The query parameters a captioner board reads (selectors.captioner_board_query, the page's
# download, the API's format): any other, or another value, gives the same response.
BOARD_ORDERS = ("asc", "desc")
BOARD_DOWNLOADS = ("json", "csv")
API_FORMATS = ("json", "api")


def board_query(request: BoardRequest, column_slugs: AbstractSet[str]) -> dict[str, str]:
    """The part of the query string that changes a board response: `sort` when it names a column,
    `order`, `download` and `format` when they are values the board knows."""
    known = {"order": BOARD_ORDERS, "download": BOARD_DOWNLOADS, "format": API_FORMATS}
    return {
        name: value
        for name, value in request.GET.items()
        if (name == "sort" and value in column_slugs) or value in known.get(name, ())
    }


def board_validators(request: BoardRequest, state: BoardRequestState, variant: str = "") -> str:
    """The ETag of the captioner board response this request gets; `state`: the dataset, its
    snapshot's version and the ids of the systems this viewer may see (selectors.board_request_state),
    read once per request and passed on to the board.

    Made from what the viewer is shown (the columns and the visible rows of the snapshot, the query
    parameters that change the response), never from the snapshot's time: a private submission
    being scored rebuilds the snapshot, and a validator that moved with it would tell anyone
    watching that something hidden happened. Remembered under the inputs it was made from, so only a
    new snapshot, a change of visibility or a new viewer reads the snapshot again; remembered only
    for a query string with nothing unknown in it, so made-up parameters fill no cache. `variant`:
    anything else the response depends on (the API's negotiated format)."""
    dataset = state.dataset
    shown_to = (dataset.pk, dataset.slug, dataset.title, viewer_key(request), request.path, variant)
    remembered = None
    if state.version is not None:
        inputs = (state.version, sorted(state.visible), request.get_full_path())
        remembered = VALIDATOR_PREFIX + _digest(deployment_digest(), *inputs, *shown_to)
        etag = kept_get(remembered)
        if etag is not None:
            return etag
    payload, built = board_payload(dataset, with_version=True)
    shown = [row for row in payload["rows"] if row["system"]["id"] in state.visible]
    query = board_query(request, {column["slug"] for column in payload["columns"]})
    etag = f'"{_digest(deployment_digest(), payload["columns"], shown, sorted(query.items()), *shown_to)}"'
    canonical = len(request.GET) == len(query) and all(len(request.GET.getlist(name)) == 1 for name in query)
    if remembered is not None and built == state.version and canonical:  # (not rebuilt since the version was read)
        kept_set(remembered, etag)
    return etag


def board_headers(response: R, request: BoardRequest, etag: str | None) -> R:
    """The validator, and who may keep the response: anyone for an anonymous one (revalidated each
    time), the viewer alone for a signed-in one."""
    if etag is not None:
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


def conditional_response(request: HttpRequest, etag: str, respond: Callable[[], HttpResponse]) -> HttpResponse:
    """The response to a GET whose validator is `etag`: 304 when the client's copy is current; for
    an anonymous visitor, the response kept under the ETag, or `respond()` kept there; for a
    signed-in one, `respond()`, never kept."""
    unchanged = not_modified(request, etag)
    if unchanged is not None:
        return board_headers(unchanged, request, etag)
    anonymous = not request.user.is_authenticated
    kept = kept_get(PREFIX + etag) if anonymous else None
    if kept is not None:
        response = HttpResponse(kept["content"], content_type=kept["type"])
        if kept.get("disposition"):
            response["Content-Disposition"] = kept["disposition"]
        return board_headers(response, request, etag)
    response = respond()
    if anonymous and response.status_code == 200 and not response.streaming:
        kept = {"content": response.content, "type": response["Content-Type"]}
        if response.has_header("Content-Disposition"):
            kept["disposition"] = response["Content-Disposition"]
        kept_set(PREFIX + etag, kept)
    return board_headers(response, request, etag if response.status_code == 200 else None)


def conditional_board(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """For a view `(request, dataset, ..., visible=None)`, called as `(request, slug, ...)`: the
    dataset read with its board's state (404 when the viewer may not see it), then
    conditional_response with the board's validator. The view is passed the visible systems the
    validator read (`visible`), so the board does not read them again."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, slug: str, *args, **kwargs) -> HttpResponse:
        try:
            state = board_request_state(slug, request.user)
        except Dataset.DoesNotExist:
            raise Http404("no such dataset") from None
        if request.method not in ("GET", "HEAD"):
            return view(request, state.dataset, *args, **kwargs)
        etag = board_validators(request, state)
        return conditional_response(
            request, etag, lambda: view(request, state.dataset, *args, visible=state.visible, **kwargs)
        )

    return wrapper


def kept_fragment(name: str, version: str, query: object, build: Callable[[], str]) -> tuple[str, str]:
    """A rendered part of a page shared by every viewer, kept under the version of what it is read
    from and the query: (its HTML, its digest). `build` renders it on a miss."""
    key = f"fragment:{name}:" + _digest(deployment_digest(), version, query)
    kept = kept_get(key)
    if kept is None:
        html = build()
        kept = (html, _digest(html))
        kept_set(key, kept)
    return kept


def page_validator(request: BoardRequest, *parts: object) -> str:
    """The ETag of a page made of `parts` (digests of what it shows, which cover the query string's
    effect) for this viewer at this path: made-up query parameters give the same validator, so they
    fill no cache."""
    return f'"{_digest(deployment_digest(), viewer_key(request), request.path, *parts)}"'
