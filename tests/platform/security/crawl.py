"""Crawling every URL of the project, for the leak tests: every URL pattern of the URLconf and every
API path of the OpenAPI schema, filled with real values, each response read as text with its
volatile parts (CSRF tokens, nonces, relative times) masked."""

from __future__ import annotations

import itertools
import json
import re
import sys
from collections.abc import Collection
from urllib.parse import parse_qs, quote, unquote, urlsplit

from django.http import QueryDict
from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, reverse

from plumbing.guards import RequestGuardMiddleware

KINDS = frozenset({"int", "slug", "str", "path", "uuid"})
CONVERTER = re.compile(r"<(?:(?P<kind>\w+):)?(?P<name>\w+)>")
MASKS = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"'), 'name="csrfmiddlewaretoken" value=""'),
    (re.compile(r'nonce="[^"]*"'), 'nonce=""'),
    (re.compile(r"(?:\d+|an?)(?:\xa0|\s)(?:second|minute|hour)s?(?:\xa0|\s)ago|\bnow\b"), "some time ago"),
]


def _patterns(resolvers=None, prefix: str = ""):
    for entry in get_resolver().url_patterns if resolvers is None else resolvers:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from _patterns(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield route


def crawl_urls(fill: dict[str, list[str]], schema_paths: list[str]) -> list[str]:
    """Every route filled with every combination of `fill`'s values for its parameters' kinds
    ("int", "slug", "str", "path", "uuid"; `id` and `pk` take the ints). A parameter right after a
    path segment that `fill` names takes that pool instead (`"datasets": [...]` for
    `datasets/<slug:slug>/`, `"systems"`, `"badge"` …): a route with three slugs is then not filled
    with every slug in every place, most of them answering 404."""
    routes = []
    for route in _patterns():
        regex = route.startswith("^") or "(?P<" in route
        if regex:  # a regex route (the admin's): its named groups are filled like <path:...>
            route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<path:\1>", route).lstrip("^").rstrip("$").replace("\\", "")
        routes.append(route)
    routes += [path.lstrip("/").replace("{", "<").replace("}", ">") for path in schema_paths]
    urls = set()
    for route in routes:
        pools = []
        for match in CONVERTER.finditer(route):
            kind, name = match.group("kind"), match.group("name")
            segment = route[: match.start()].rstrip("/").rsplit("/", 1)[-1]
            if name in ("id", "pk"):
                pools.append(fill["int"])
            elif segment in fill and segment not in KINDS:
                pools.append(fill[segment])
            else:
                pools.append(fill.get(kind or "str", fill["str"]))
        for values in itertools.product(*pools):
            filled = iter(values)
            urls.add("/" + CONVERTER.sub(lambda _, filled=filled: quote(next(filled), safe=""), route))
    return sorted(urls)


def body(response) -> str:
    """The status, redirect target and text of a response, volatile parts masked."""
    content = b"".join(response.streaming_content) if response.streaming else response.content
    text = content.decode("utf-8", "replace")
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    location = response.headers.get("Location", "")
    return f"{response.status_code} {location}\n{text}"


def crawl(client, urls: list[str], queries: list[str], hidden: Collection[str] = ()) -> dict[str, str]:
    """Each URL with each query, masked. A URL whose plain request (the first query, "") is turned
    away before its view could read a query is not asked again with the others; its plain answer is
    still checked, and every query of every other URL. Turned away:

    - a redirect to a login page: the login gate (the admin's, for every admin page a viewer who is
      not staff asks for, a third of the requests; `login_required`'s);
    - a 404 for a path that names something: no route, or a route whose view found nothing for the
      values in the path (an id of another kind, a hidden submission's to a stranger). Half of the
      URLs are these, each filled value tried on every route; none answered otherwise with a query
      when they were asked with all of them. A route with nothing in its path that answers 404 goes
      on to the queries below (one that needs a query to find what it shows), and so does a URL
      with a `hidden` value (a hidden row's id, slug or key) in its path: a view that served a
      query's download before checking who may see the row would answer 404 only plainly.

    Of the URLs asked further, a query is left out when their plain request read none of the
    query's names and not the query as a whole (`QueryReads`, noted by `watch_queries`): every value
    that request read would have been the same with the query, so the query's answer is the plain
    one, already checked. Four in five of the leak crawl's requests with a query were of these; the
    views reading a query (searches, filters, downloads, sorting, every API list) are still asked
    with every query whose names they read. This takes a view's answer to depend on what it reads
    of the request and on the stored rows only: the requests left out were also repeat visits
    (a kept board response, a rating task handed out again), which the plain request stands for.
    A URL with a query of its own (the compare pages') takes each query's names after its own.

    What cannot be noted: a read of an empty query through a C fast path that never calls a Python
    method (`json.dumps(request.GET)` writes `{}` at once). No view does that; one echoing its query
    should read it by name."""
    assert not any("\x00" in unquote(query) for query in queries)  # (what the guard's NUL check relies on)
    seen = {}
    watch_queries(client)
    for url in urls:
        plain: QueryReads | None = None  # what the plain request read of its query
        for number, query in enumerate(queries):
            if plain is not None and not plain.reads(query):
                continue
            asked = _joined(url, query)
            response = client.get(asked)
            seen[asked] = body(response)
            if number == 0 and query == "":
                plain = response.wsgi_request.capbench_reads
                if _to_a_login_page(response):
                    break
                if _nothing_at_path(response) and not hidden_in(url, hidden):
                    break
    return seen


class QueryReads:
    """What one request read of its query string: the names asked for (`request.GET.get("q")`,
    `"q" in request.GET`, `request.GET["q"]`, `getlist`), or all of it (iterated, counted, copied,
    encoded, or the raw `QUERY_STRING` read from META: `request.get_full_path()` does)."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.whole = False

    def reads(self, query: str) -> bool:
        """Whether a request with `query` could have answered otherwise than the plain one."""
        return self.whole or bool(self.names & set(parse_qs(query.lstrip("?"), keep_blank_values=True)))


def _noting(*, whole: tuple[str, ...] = (), by_name: tuple[str, ...] = ()):
    """A class decorator: each of the base's `whole` methods notes a read of the whole query before
    doing what it does, each of its `by_name` methods (a name first) passes the name to `_note`."""

    def decorate(cls):
        base = cls.__mro__[1]
        for name in whole:
            setattr(cls, name, _whole_read(getattr(base, name)))
        for name in by_name:
            setattr(cls, name, _name_read(getattr(base, name)))
        return cls

    return decorate


def _whole_read(inherited):
    def read(self, *args, **kwargs):
        self.capbench_reads.whole = True
        return inherited(self, *args, **kwargs)

    return read


def _name_read(inherited):
    def read(self, key, *args, **kwargs):
        self._note(key)
        return inherited(self, key, *args, **kwargs)

    return read


@_noting(
    whole=(
        "__iter__", "__len__", "__reversed__", "__repr__", "__str__", "__eq__", "__or__", "__ror__",
        "__getstate__", "keys", "values", "items", "copy", "dict", "urlencode",
    ),
    by_name=("__getitem__", "__contains__", "get", "getlist", "_getlist"),
)  # fmt: skip
class _WatchedQuery(QueryDict):
    """A request's GET that notes what is read of it in `capbench_reads` (a copy, made of this class,
    notes there too)."""

    capbench_reads: QueryReads

    @classmethod
    def of(cls, query: QueryDict, reads: QueryReads) -> _WatchedQuery:
        """`query`'s names and values, noting into `reads` (immutable, as a request's GET)."""
        watched = cls(mutable=True, encoding=query.encoding)
        for name, values in query.lists():
            watched.setlist(name, values)
        watched._mutable = False
        watched.capbench_reads = reads
        return watched

    def _note(self, key) -> None:
        self.capbench_reads.names.add(key)

    def lists(self):
        if sys._getframe(1).f_code is not RequestGuardMiddleware._refusal.__code__:
            self.capbench_reads.whole = True  # (the guard's look for a NUL answers the same to every query here)
        return super().lists()

    def __copy__(self):
        self.capbench_reads.whole = True
        copied = super().__copy__()
        copied.capbench_reads = self.capbench_reads
        return copied

    def __deepcopy__(self, memo):
        self.capbench_reads.whole = True
        copied = super().__deepcopy__(memo)
        copied.capbench_reads = self.capbench_reads
        return copied


@_noting(whole=("__iter__", "keys", "values", "items", "copy"), by_name=("__getitem__", "get", "__contains__", "pop"))
class _WatchedMeta(dict):
    """A request's META (its WSGI environ) that notes a read of QUERY_STRING, or of all of it."""

    capbench_reads: QueryReads

    def _note(self, key) -> None:
        if key == "QUERY_STRING":
            self.capbench_reads.whole = True


def watch_queries(client) -> None:
    """Every request `client` sends from now on notes what it reads of its query
    (`response.wsgi_request.capbench_reads`). Its headers are read first (`request.headers` is
    built by going through META, for the headers only)."""
    handler = client.handler
    if getattr(handler, "capbench_watching", False):
        return
    answer = handler.get_response

    def watched(request):
        reads = QueryReads()
        request.headers  # noqa: B018 (built from the plain META, before it is watched)
        query = _WatchedQuery.of(request.GET, reads)
        meta = _WatchedMeta(request.META)
        meta.capbench_reads = request.capbench_reads = reads
        request.GET, request.META, request.environ = query, meta, meta
        return answer(request)

    handler.get_response = watched
    handler.capbench_watching = True


def _joined(url: str, query: str) -> str:
    """`url` with `query` ("?name=value&…") after its own query, if it has one."""
    return url + "&" + query[1:] if "?" in url and query.startswith("?") else url + query


def hidden_in(url: str, hidden: Collection[str]) -> bool:
    return any(unquote(segment) in hidden for segment in urlsplit(url).path.split("/"))


def _nothing_at_path(response) -> bool:
    if response.status_code != 404:
        return False
    try:
        return bool(response.resolver_match.args or response.resolver_match.kwargs)
    except Resolver404:
        return True  # no route


def _to_a_login_page(response) -> bool:
    location = urlsplit(response.headers.get("Location", "")).path
    return response.status_code == 302 and location in (reverse("accounts:login"), reverse("admin:login"))


def schema_paths(client) -> list[str]:
    response = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return list(json.loads(response.content)["paths"])
