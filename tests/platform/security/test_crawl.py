"""The leak crawls' own shortcut (crawl.py): a URL is asked with a query only when its plain request
read one of the query's names, or the query as a whole. A wrong note would hide a leak behind a
query never asked, so what is noted is checked on real views."""

from __future__ import annotations

import copy
import json

import pytest
from django.http import QueryDict

from tests.platform.security.crawl import QueryReads, _WatchedQuery, crawl, watch_queries

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]


def _reads(client, url: str):
    response = client.get(url)
    assert response.status_code == 200, url
    return response.wsgi_request.capbench_reads


def test_a_request_notes_the_names_it_read_and_a_read_of_the_whole_query(client, demo_dataset):
    watch_queries(client)
    items = _reads(client, "/datasets/demo/items/")  # its search reads q (and the page number)
    assert "q" in items.names
    assert not items.whole
    assert items.reads("?q=dog")
    assert not items.reads("?download=csv")
    page = _reads(client, "/datasets/demo/")
    assert not page.whole
    assert not page.reads("?q=dog&sort=bleu_4")
    # An API list hands its query to a filter set, which asks whether it is empty: all of it is read.
    listed = _reads(client, "/api/v1/scores/")
    assert listed.whole
    assert listed.reads("?anything=1")


def test_the_raw_query_string_counts_as_the_whole_query(client, demo_dataset):
    """A login redirect carries the page's full path (its query included) in `next`."""
    watch_queries(client)
    response = client.get("/accounts/")
    assert response.status_code == 302
    assert response.wsgi_request.capbench_reads.whole


def test_only_the_queries_a_page_reads_are_asked(client, demo_dataset):
    queries = ["", "?q=dog", "?download=csv"]
    seen = crawl(client, ["/datasets/demo/", "/datasets/demo/items/"], queries)
    assert sorted(seen) == ["/datasets/demo/", "/datasets/demo/items/", "/datasets/demo/items/?q=dog"]
    assert seen["/datasets/demo/items/?q=dog"] != seen["/datasets/demo/items/"]  # the search ran


def test_a_url_with_a_query_of_its_own_takes_each_query_after_it(client, demo_dataset):
    seen = crawl(client, ["/datasets/demo/items/?page=1"], ["", "?q=dog", "?download=csv"])
    assert sorted(seen) == ["/datasets/demo/items/?page=1", "/datasets/demo/items/?page=1&q=dog"]


def _watched() -> _WatchedQuery:
    return _WatchedQuery.of(QueryDict("q=dog&page=2"), QueryReads())


@pytest.mark.parametrize(
    "read",
    [
        list,
        len,
        bool,
        dict,
        repr,
        str,
        reversed,
        lambda q: {**q},
        lambda q: q | {},
        lambda q: {} | q,
        lambda q: q == {},
        lambda q: json.dumps(q),
        lambda q: q.keys(),
        lambda q: q.values(),
        lambda q: q.items(),
        lambda q: q.lists(),
        lambda q: q.dict(),
        lambda q: q.urlencode(),
        lambda q: q.copy(),
        copy.copy,
        copy.deepcopy,
    ],
)
def test_every_way_of_reading_the_whole_query_is_noted(read):
    query = _watched()
    read(query)
    assert query.capbench_reads.whole


def test_a_read_by_name_notes_the_name_only():
    query = _watched()
    assert query.get("q") == "dog"
    assert query["page"] == "2"
    assert "sort" not in query
    assert query.getlist("order") == []
    assert query.capbench_reads.names == {"q", "page", "sort", "order"}
    assert not query.capbench_reads.whole


def test_a_copy_notes_into_the_same_reads():
    query = _watched()
    copied = query.copy()
    assert copied.capbench_reads is query.capbench_reads
    assert copied.get("extra") is None
    assert "extra" in query.capbench_reads.names
