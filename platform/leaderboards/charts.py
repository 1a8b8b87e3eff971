"""Plotly figures (as JSON for plotly.js, served locally) for a metric on one dataset."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

BINS = 10
# Human ratings on at most this many whole-number levels (a 0–10 scale) get a heatmap row each; other
# ratings (means of several annotators: 2.33, 2.67, …) are binned into RATING_BINS equal ranges.
MAX_LEVELS = 11
RATING_BINS = 5
# The page's look, stated here instead of a plotly template (plotly_white is 7 KB in every figure).
_AXIS = {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db", "automargin": True}
LAYOUT = {
    "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
    "height": 360,
    "template": "none",
    "paper_bgcolor": "#fff",
    "plot_bgcolor": "#fff",
    "font": {"family": "system-ui, sans-serif", "color": "#1d2330"},
    "colorway": ["#2563eb", "#f59e0b", "#10b981", "#ef4444"],
    "xaxis": _AXIS,
    "yaxis": _AXIS,
}


@dataclass
class MetricOnDataset:
    """What the figures are drawn from (leaderboards/metric_page.py reads it from the database)."""

    metric_name: str
    human: np.ndarray  # one row per judgment with a metric score
    metric: np.ndarray
    all_scores: np.ndarray  # every candidate caption's score
    failed: int


def _people(data: MetricOnDataset, dimension: str | None) -> str:
    """The human axis' name: the judgment dimension when known (THumB's total, Flickr8k's overall)."""
    dimension = dimension or getattr(data, "dimension", None)
    return f"human rating: {dimension}" if dimension else "human rating"


def _layout(title: str, x: str, y: str) -> dict:
    return {
        **LAYOUT,
        "title": {"text": title},
        "xaxis": {**_AXIS, "title": {"text": x}},
        "yaxis": {**_AXIS, "title": {"text": y}},
    }


SCATTER_POINTS = 3000  # at most this many points: a 130,000-caption set would be megabytes of page


def scatter(data: MetricOnDataset, dimension: str | None = None) -> str:
    rng = np.random.default_rng(0)  # jitter the discrete human ratings so overlapping points show
    human, metric = data.human, data.metric
    title = f"{data.metric_name} against the {_people(data, dimension)}"
    if len(human) > SCATTER_POINTS:  # the same sample on every request (seeded); the heatmap counts them all
        chosen = np.sort(rng.choice(len(human), SCATTER_POINTS, replace=False))
        human, metric = human[chosen], metric[chosen]
        title += f" (a random {SCATTER_POINTS:,} of {len(data.human):,} captions)"
    jitter = rng.uniform(-0.15, 0.15, len(human))
    people = _people(data, dimension)
    figure = go.Figure(
        go.Scattergl(
            # float32: a chart needs no more, and the page carries half the bytes
            x=(human + jitter).astype(np.float32),
            y=metric.astype(np.float32),
            mode="markers",
            marker={"size": 4, "opacity": 0.35},
            name="captions",
        ),
        layout=_layout(title, f"{people} (jittered)", data.metric_name),
    )
    return figure.to_json()


def rating_rows(human: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each judgment's heatmap row and the rows' labels: one row per rating level when the ratings
    are whole numbers on at most MAX_LEVELS levels; else RATING_BINS equal ranges from the lowest
    rating to the highest (empty ranges left out), labelled [low, high) and the last [low, high]."""
    levels = np.unique(human)
    if len(levels) <= MAX_LEVELS and np.allclose(levels, np.round(levels)):
        return np.searchsorted(levels, human), [f"{level:g}" for level in levels]
    edges = np.linspace(levels[0], levels[-1], RATING_BINS + 1)
    bins = np.clip(np.searchsorted(edges, human, side="right") - 1, 0, RATING_BINS - 1)
    used = np.unique(bins)
    labels = [f"[{edges[i]:.3g}, {edges[i + 1]:.3g}{']' if i == RATING_BINS - 1 else ')'}" for i in used.tolist()]
    return np.searchsorted(used, bins), labels


def heatmap(data: MetricOnDataset, dimension: str | None = None) -> str:
    """Rows: human ratings (levels, or ranges of fractional ratings: rating_rows); columns: metric-score
    deciles; each row sums to 1 (VisCE² Fig. 3 style). A row's label gives its number of judgments."""
    people = _people(data, dimension)
    edges = np.unique(np.quantile(data.metric, np.linspace(0, 1, BINS + 1))) if len(data.metric) else np.array([])
    bins = np.clip(np.searchsorted(edges, data.metric, side="right") - 1, 0, max(len(edges) - 2, 0))
    rows, ratings = rating_rows(data.human) if len(data.human) else (np.array([], dtype=int), [])
    counts = np.zeros((len(ratings), max(len(edges) - 1, 1)))
    np.add.at(counts, (rows, bins), 1)
    totals = counts.sum(axis=1, keepdims=True)
    shares = counts / np.maximum(totals, 1)
    labels = [f"{edges[i]:.3g}–{edges[i + 1]:.3g}" for i in range(len(edges) - 1)] or ["all"]
    figure = go.Figure(
        go.Heatmap(
            z=shares.round(4).tolist(),
            x=labels,
            y=[f"{rating} (n={int(total)})" for rating, total in zip(ratings, totals[:, 0], strict=True)],
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar={"title": {"text": "share"}},
        ),
        layout=_layout(
            f"{data.metric_name} deciles per {people} (each row sums to 1)",
            f"{data.metric_name} (decile bins)",
            people,
        ),
    )
    return figure.to_json()


def distribution(data: MetricOnDataset) -> str:
    """40 bins counted here, not every score sent for the browser to count."""
    scores = data.all_scores[np.isfinite(data.all_scores)]
    counts, edges = np.histogram(scores, bins=40) if len(scores) else (np.array([]), np.array([0.0]))
    figure = go.Figure(
        go.Bar(
            x=((edges[:-1] + edges[1:]) / 2).astype(np.float32),
            y=counts.astype(np.int32),
            width=float(edges[1] - edges[0]) if len(edges) > 1 else None,
            name="captions",
        ),
        layout=_layout(f"Distribution of {data.metric_name} over the dataset's captions", data.metric_name, "captions"),
    )
    figure.update_layout(bargap=0.02)
    return figure.to_json()


def category_bars(categories: list[tuple[str, float, float | None, float | None]], metric_name: str) -> str:
    """Accuracy per category with its 95% interval; a category without one (no replicate had a
    value) gets no error bar."""
    names = [name for name, *_ in categories]
    values = [100 * value for _, value, _, _ in categories]
    figure = go.Figure(
        go.Bar(
            x=names,
            y=values,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [0 if high is None else 100 * (high - value) for _, value, _, high in categories],
                "arrayminus": [0 if low is None else 100 * (value - low) for _, value, low, _ in categories],
            },
        )
    )
    figure.update_layout(
        _layout(f"{metric_name}: pairwise accuracy by category (95% intervals)", "category", "accuracy %")
    )
    figure.update_yaxes(range=[0, 100])
    return figure.to_json()
