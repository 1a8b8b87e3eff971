"""HTTP caching of the boards: an `ETag` of what the viewer is shown, a 304 to a conditional
request before any table is built, and anonymous responses kept whole (in Valkey, and in each web
process) under their ETag.

A captioner board's validator covers everything its response depends on: the columns and the rows
of the snapshot this viewer may see (visibility read live, once per request: the board is built
from the same set), the viewer (the page names them and may show their private rows), the query
parameters the board reads and the deployment (templates, code, static files). Nothing hidden moves
it, so it tells no one that private work happened. It is made from digests stored with the
snapshot (snapshots.payload_digests), read in the same query as the visibility: every request does
the same work whatever happened in private, and none reads the snapshot itself to validate.

The metric board depends on no viewer (it shows public datasets' results only): its table is kept
under a fingerprint of the tables it is read from (`metric_board.metric_board_version`), and its
validator is the table's digest.

Only what a request may name is kept: a response under its ETag, made from the query parameters
the board knows (made-up ones give the same ETag), so the number of entries is bounded by the
boards and their real variants, never by what a visitor types. Responses for a signed-in viewer are
`private` and never kept: a shared cache never stores them; every response varies on Cookie and
Authorization. No Last-Modified: the only times at hand are the snapshots', which private work
moves. Valkey out of reach is a miss, never an error."""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any, Protocol, TypeVar

import redis
from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.cache import get_conditional_response, patch_cache_control, patch_vary_headers

from catalog.selectors import chosen_subset
from leaderboards.captioner import PEOPLE, captioner_board_params
from leaderboards.requests import BoardRequestState
from leaderboards.snapshots import board_payload, digest_of, payload_digests

log = logging.getLogger(__name__)


class BoardRequest(Protocol):
    """A Django request, or a REST framework one (whose `user` is the token's)."""

    user: Any
    method: str | None
    path: str
    COOKIES: Any
    GET: Any


R = TypeVar("R", bound=HttpResponse)
KEPT_SECONDS = 24 * 3600  # a kept response's life at most (a new snapshot misses it sooner)
PREFIX = "board-response:"  # + ETag: an anonymous response, whole


class Kept:
    """A process's own bounded copy of immutable entries (least recently used out first, none kept
    past KEPT_SECONDS). Only for keys whose value never changes once written (an ETag's response,
    a table under the fingerprint of what it was read from): a copy here is never stale, and a hit
    costs no round trip to Valkey. Valkey stays the level shared between processes."""

    def __init__(self, max_bytes: int, seconds: float = KEPT_SECONDS) -> None:
        self.max_bytes, self.seconds = max_bytes, seconds
        self.size = 0
        self.entries: OrderedDict[str, tuple[Any, int, float]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self.lock:
            found = self.entries.get(key)
            if found is None:
                return None
            if found[2] < time.monotonic():
                self._drop(key)
                return None
            self.entries.move_to_end(key)
            return found[0]

    def put(self, key: str, value: Any, size: int) -> None:
        if size > self.max_bytes // 4:  # one entry never pushes out most of the rest
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = (value, size, time.monotonic() + self.seconds)
            self.size += size
            while self.size > self.max_bytes:
                self._drop(next(iter(self.entries)))

    def _drop(self, key: str) -> None:
        _, freed, _ = self.entries.pop(key)
        self.size -= freed

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


KEPT_HERE = Kept(settings.PAGE_MEMORY_BYTES)


def kept_get(key: str) -> Any:
    """From this process's copy, else from Valkey (then kept here too); None when it is in neither
    or Valkey cannot be reached."""
    value = KEPT_HERE.get(key)
    if value is None:
        try:
            value = cache.get(key)
        except redis.RedisError as error:
            log.warning("page cache unreachable, serving without it: %s", error)
            return None
        if value is not None:
            KEPT_HERE.put(key, value, _size(value))
    return value


def kept_set(key: str, value: Any) -> None:
    KEPT_HERE.put(key, value, _size(value))
    try:
        cache.set(key, value, KEPT_SECONDS)
    except redis.RedisError as error:
        log.warning("page cache unreachable, response not kept: %s", error)


def _size(value: Any) -> int:
    if isinstance(value, dict):
        return sum(len(part) for part in value.values() if isinstance(part, bytes | str)) + 200
    if isinstance(value, tuple):
        return sum(len(part) for part in value if isinstance(part, str)) + 200
    return len(value) + 200 if isinstance(value, str) else 200


@functools.cache
def deployment_digest() -> str:
    """The templates, the Python code and the static files' manifest (hashed names the pages link
    to) of this deployment: changing a page, how a board is built or a stylesheet changes every
    validator. Read once per process."""
    digest = hashlib.sha256()
    engine: dict[str, Any] = settings.TEMPLATES[0]
    folders = [(Path(folder), "*.html") for folder in engine["DIRS"]]
    code = Path(__file__).resolve().parents[1]  # platform/
    folders += [(code, "*.py"), (code.parent / "evaluation", "*.py")]
    for folder, pattern in folders:
        for path in sorted(folder.rglob(pattern)):
            digest.update(path.read_bytes())
    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    if manifest.is_file():
        digest.update(manifest.read_bytes())
    return digest.hexdigest()[:16]


def _digest(*parts: object) -> str:
    return digest_of(parts)


def viewer_key(request: BoardRequest) -> str:
    """Whom a response is for: "anonymous", or the account as its pages show it (name, staff link)
    and its CSRF secret (a signed-in page carries a token from it; signing in again makes a new one,
    and an old copy must not come back)."""
    user = request.user
    if not user.is_authenticated:
        return "anonymous"
    shown = (user.pk, user.get_username(), user.is_staff, request.COOKIES.get(settings.CSRF_COOKIE_NAME, ""))
    return f"user:{user.pk}:{_digest(*shown)[:16]}"


# The query parameters each captioner board response reads (captioner.captioner_board_page, the
# page's downloads, the API's format): any other, or another value, gives the same response.
PAGE_PARAMETERS = {"download": ("json", "csv")}
API_PARAMETERS = {"format": ("json", "api")}
ORDERS = ("asc", "desc")


def board_query(request: BoardRequest, column_slugs: AbstractSet[str], *, api: bool = False) -> dict[str, str]:
    """The part of the query string that changes a board response: `sort` when it names a column
    (or the people column), `order`, the search and the filter as the board reads them
    (captioner.captioner_board_params), and the page's `download` or the API's `format` when it is
    one they know."""
    query = {}
    sort = request.GET.get("sort")
    if sort in column_slugs or sort == PEOPLE:
        query["sort"] = sort
    if request.GET.get("order") in ORDERS:  # (it reverses the headline metric's order too)
        query["order"] = request.GET["order"]
    search = captioner_board_params(request.GET)
    if search.search:
        query["q"] = search.search  # as typed: the page shows it back (and never kept: searched)
    if search.only:
        query["only"] = search.only
    for name, values in (API_PARAMETERS if api else PAGE_PARAMETERS).items():
        if request.GET.get(name) in values:
            query[name] = request.GET[name]
    return query


def board_validators(request: BoardRequest, state: BoardRequestState, *, variant: str = "", api: bool = False) -> str:
    """The ETag of the captioner board response this request gets; `state`: the dataset, its
    snapshot's version and digests, and the ids of the systems this viewer may see
    (requests.board_request_state), read once per request and passed on to the board.

    Made from what the viewer is shown (the digests of the snapshot's columns and of its visible
    rows, the query parameters the board reads), never from the snapshot's time: a private
    submission being scored rebuilds the snapshot, and a validator that moved with it would tell
    anyone watching that something hidden happened. `variant`: anything else the response depends
    on (the API's negotiated media type)."""
    dataset = state.dataset
    digests = state.digests or payload_digests(board_payload(dataset))  # (a snapshot from before digests)
    shown = [digest for system, digest in digests["rows"] if system in state.visible]
    query = board_query(request, set(digests["slugs"]), api=api)
    subset = chosen_subset(request.GET, dataset)  # one of the dataset's own values only: never free text
    if subset is not None:
        query["domain"] = subset
    return '"{}"'.format(
        _digest(
            deployment_digest(),
            digests["columns"],
            digests.get("people", ""),  # (a snapshot from before it: none)
            shown,
            sorted(query.items()),
            (dataset.pk, dataset.slug, dataset.title, dataset.headline_metric, dataset.references_hidden),
            viewer_key(request),
            request.path,
            variant,
        )
    )


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


def searched(request: BoardRequest) -> bool:
    """Whether a board request carries a search (`?q=`): its text is anything a visitor types, so
    its responses are never kept (each would be a new entry in Valkey, which is also the broker)."""
    return bool(captioner_board_params(request.GET).search)


def conditional_response(
    request: HttpRequest, etag: str, respond: Callable[[], tuple[HttpResponse, bool]], *, keep: bool = True
) -> HttpResponse:
    """The response to a GET whose validator is `etag`: 304 when the client's copy is current; for
    an anonymous visitor, the response kept under the ETag, or the one `respond()` makes, kept there
    when it says it is what the ETag was made from (never when not `keep`); for a signed-in one,
    `respond()`, never kept. A response made from something newer than its ETag goes out without one."""
    unchanged = not_modified(request, etag)
    if unchanged is not None:
        return board_headers(unchanged, request, etag)
    anonymous = keep and not request.user.is_authenticated
    kept = kept_get(PREFIX + etag) if anonymous else None
    if kept is not None:
        response = HttpResponse(kept["content"], content_type=kept["type"])
        if kept.get("disposition"):
            response["Content-Disposition"] = kept["disposition"]
        return board_headers(response, request, etag)
    response, matches = respond()
    ok = response.status_code == 200 and matches
    if anonymous and ok and not response.streaming:
        kept = {"content": response.content, "type": response["Content-Type"]}
        if response.has_header("Content-Disposition"):
            kept["disposition"] = response["Content-Disposition"]
        kept_set(PREFIX + etag, kept)
    return board_headers(response, request, etag if ok else None)


def kept_fragment(name: str, version: str, query: object, build: Callable[[], str]) -> tuple[str, str]:
    """A rendered part of a page shared by every viewer, kept under the version of what it is read
    from and the query (known values only: the caller's to check): (its HTML, its digest). `build`
    renders it on a miss."""
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
