"""Chart figures from board data: a category without an interval (no bootstrap replicate had a value)
is drawn without an error bar, not a TypeError on the metric page; the heatmap has a row per real
rating level (fractional ratings binned); the axes name the human-judgment dimension."""

import base64
import json

import numpy as np

from leaderboards.charts import category_bars, distribution, heatmap, rating_rows, scatter
from leaderboards.metric_page import MetricOnDataset


def test_a_category_without_an_interval_gets_no_error_bar():
    figure = json.loads(category_bars([("HC", 0.6, 0.5, 0.7), ("MM", 0.4, None, None)], "CIDEr-D"))
    bar = figure["data"][0]
    assert bar["x"] == ["HC", "MM"]
    assert bar["y"] == [60.0, 40.0]
    assert [round(v, 6) for v in bar["error_y"]["array"]] == [10.0, 0]
    assert [round(v, 6) for v in bar["error_y"]["arrayminus"]] == [10.0, 0]


def _data(human, metric) -> MetricOnDataset:
    human, metric = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    return MetricOnDataset("CIDEr-D", human, metric, metric, failed=0)


def test_the_heatmap_has_a_row_per_rating_level_when_ratings_are_whole_numbers():
    rng = np.random.default_rng(0)
    human = rng.integers(1, 5, 400)
    figure = json.loads(heatmap(_data(human, rng.random(400)), dimension="overall"))
    trace = figure["data"][0]
    counts = np.bincount(human)[1:]
    assert trace["y"] == [f"{level} (n={count})" for level, count in zip(range(1, 5), counts, strict=True)]
    assert all(abs(sum(row) - 1) < 1e-3 for row in trace["z"])
    assert len(trace["z"]) == 4  # each row a distribution
    assert figure["layout"]["yaxis"]["title"]["text"] == "human rating: overall"


def test_fractional_ratings_are_binned_into_a_few_labelled_ranges():
    """THumB-style means of several annotators (thirds): a few ranges, not a row per distinct mean."""
    rng = np.random.default_rng(1)
    human = np.round(rng.uniform(0, 5, 600) * 3) / 3
    assert len(np.unique(human)) > 10
    figure = json.loads(heatmap(_data(human, rng.random(600)), dimension="total"))
    labels = figure["data"][0]["y"]
    assert [label.split(" (")[0] for label in labels] == ["[0, 1)", "[1, 2)", "[2, 3)", "[3, 4)", "[4, 5]"]
    assert sum(int(label.split("n=")[1].rstrip(")")) for label in labels) == 600  # every judgment in one row
    rows, names = rating_rows(np.array([0.0, 0.99, 1.0, 5.0, 5.0]))
    assert rows.tolist() == [0, 0, 1, 2, 2]
    assert names == ["[0, 1)", "[1, 2)", "[4, 5]"]
    # Empty ranges are left out (no row of zeros normalised to nothing).
    rows, names = rating_rows(np.array([1.5, 1.5, 4.5, 4.5]))
    assert names == ["[1.5, 2.1)", "[3.9, 4.5]"]
    assert rows.tolist() == [0, 0, 1, 1]
    assert figure["layout"]["title"]["text"] == "CIDEr-D deciles per human rating: total (each row sums to 1)"


def test_the_charts_name_the_human_dimension_and_stay_small():
    rng = np.random.default_rng(2)
    data = _data(rng.integers(1, 5, 2000), rng.random(2000))
    figure = json.loads(scatter(data, dimension="overall"))
    assert figure["layout"]["xaxis"]["title"]["text"] == "human rating: overall (jittered)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "CIDEr-D"
    assert "human rating: overall" in figure["layout"]["title"]["text"]
    # Without a dimension the axis still says what it is.
    assert json.loads(scatter(data))["layout"]["xaxis"]["title"]["text"] == "human rating (jittered)"
    # No plotly template in each figure, coordinates as float32: 2,000 points in under 30 KB (float64 and the template: 50 KB).
    assert len(json.dumps(figure["layout"].get("template", {}))) < 100
    assert figure["data"][0]["x"]["dtype"] == "f4"
    assert len(scatter(data)) < 30_000
    assert len(distribution(data)) < 15_000


def test_a_large_set_is_sampled_for_the_scatter_and_counted_whole_for_the_distribution():
    rng = np.random.default_rng(1)
    human = rng.integers(1, 6, 130_000).astype(float)
    metric = human / 5 + rng.normal(0, 0.1, len(human))
    data = MetricOnDataset("CIDEr-D", human, metric, metric, failed=0)
    figure = json.loads(scatter(data))
    assert "a random 3,000 of 130,000 captions" in figure["layout"]["title"]["text"]
    assert len(scatter(data)) < 60_000
    assert json.loads(scatter(data)) == figure  # the same sample every time
    bars = json.loads(distribution(data))["data"][0]
    assert bars["type"] == "bar"
    assert len(distribution(data)) < 15_000
    counts = np.frombuffer(base64.b64decode(bars["y"]["bdata"]), dtype=np.int32)
    assert counts.sum() == 130_000
    assert len(counts) == 40
