"""Crawling every URL of the project, for the leak tests: every URL pattern of the URLconf and every
API path of the OpenAPI schema, filled with real values, each response read as text with its
volatile parts (CSRF tokens, nonces, relative times) masked."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Collection
from urllib.parse import quote, unquote, urlsplit

from django.urls import Resolver404, URLPattern, URLResolver, get_resolver, reverse

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
      when they were asked with all of them. A route with nothing in its path that answers 404 is
      still asked with every query (one that needs a query to find what it shows), and so is a
      URL with a `hidden` value (a hidden row's id, slug or key) in its path: a view that served a
      query's download before checking who may see the row would answer 404 only plainly."""
    seen = {}
    for url in urls:
        for number, query in enumerate(queries):
            response = client.get(url + query)
            seen[url + query] = body(response)
            if number == 0 and query == "" and _to_a_login_page(response):
                break
            if number == 0 and query == "" and _nothing_at_path(response) and not hidden_in(url, hidden):
                break
    return seen


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
