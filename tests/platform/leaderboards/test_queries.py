"""The metric board's query string is read one way for the page and the API (selectors.metric_board_query)."""

from __future__ import annotations

import pytest

from leaderboards.metric_board import MetricBoardQuery, UnknownProtocol, metric_board_query


def test_metric_board_query_reads_and_coerces():
    assert metric_board_query({}) == MetricBoardQuery("paper", "caption", None, None)
    given = {"protocol": "canonical", "level": "system", "family": "ngram", "reference": "free"}
    assert metric_board_query(given) == MetricBoardQuery("canonical", "system", "ngram", "free")
    odd = {"protocol": "nope", "level": "corpus", "family": "", "reference": "maybe"}
    assert metric_board_query(odd) == MetricBoardQuery("paper", "caption", None, None)


def test_the_api_reading_refuses_an_unknown_protocol():
    with pytest.raises(UnknownProtocol, match="no protocol 'nope' \\(paper, canonical or live\\)"):
        metric_board_query({"protocol": "nope"}, strict=True)
    with pytest.raises(UnknownProtocol):
        metric_board_query({"protocol": ""}, strict=True)
    assert metric_board_query({"level": "corpus"}, strict=True).level == "caption"


def test_sort_and_order_are_read_as_sent_and_coerced():
    query = metric_board_query({"sort": "flickr8k-expert:overall:tau_c", "order": "asc"})
    assert (query.sort, query.order) == ("flickr8k-expert:overall:tau_c", "asc")
    assert metric_board_query({"sort": "", "order": "sideways"}) == MetricBoardQuery("paper")
    assert len(metric_board_query({"sort": "x" * 5000}).sort or "") == 400  # checked against the board's columns later
