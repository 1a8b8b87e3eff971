"""Chart figures from board data: a category without an interval (no bootstrap replicate had a value)
is drawn without an error bar, not a TypeError on the metric page."""

import json

from leaderboards.charts import category_bars


def test_a_category_without_an_interval_gets_no_error_bar():
    figure = json.loads(category_bars([("HC", 0.6, 0.5, 0.7), ("MM", 0.4, None, None)], "CIDEr-D"))
    bar = figure["data"][0]
    assert bar["x"] == ["HC", "MM"] and bar["y"] == [60.0, 40.0]
    assert [round(v, 6) for v in bar["error_y"]["array"]] == [10.0, 0]
    assert [round(v, 6) for v in bar["error_y"]["arrayminus"]] == [10.0, 0]
