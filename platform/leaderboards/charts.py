"""Plotly figures (as JSON for plotly.js, served locally) for a metric on one dataset."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from leaderboards.selectors import MetricOnDataset

BINS = 10
LAYOUT = {"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "height": 360, "template": "plotly_white"}


def scatter(data: MetricOnDataset) -> str:
    rng = np.random.default_rng(0)  # jitter the discrete human ratings so overlapping points show
    jitter = rng.uniform(-0.15, 0.15, len(data.human))
    figure = go.Figure(
        go.Scattergl(
            x=data.human + jitter, y=data.metric, mode="markers", marker={"size": 4, "opacity": 0.35}, name="captions"
        )
    )
    figure.update_layout(
        title=f"{data.metric_name} against the human rating",
        xaxis_title="human rating (jittered)",
        yaxis_title=data.metric_name,
        **LAYOUT,
    )
    return figure.to_json()


def heatmap(data: MetricOnDataset) -> str:
    """Rows: human ratings; columns: metric-score deciles; each row sums to 1 (VisCE² Fig. 3 style)."""
    ratings = np.unique(data.human)
    edges = np.unique(np.quantile(data.metric, np.linspace(0, 1, BINS + 1)))
    bins = np.clip(np.searchsorted(edges, data.metric, side="right") - 1, 0, max(len(edges) - 2, 0))
    counts = np.zeros((len(ratings), max(len(edges) - 1, 1)))
    for row, rating in enumerate(ratings):
        counts[row] = np.bincount(bins[data.human == rating], minlength=counts.shape[1])[: counts.shape[1]]
    shares = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    labels = [f"{edges[i]:.3g}–{edges[i + 1]:.3g}" for i in range(len(edges) - 1)] or ["all"]
    figure = go.Figure(
        go.Heatmap(
            z=shares.tolist(),
            x=labels,
            y=[f"{r:g}" for r in ratings],
            colorscale="Blues",
            zmin=0,
            zmax=1,
            colorbar={"title": "share"},
        )
    )
    figure.update_layout(
        title="Metric score bins per human rating (each row sums to 1)",
        xaxis_title=f"{data.metric_name} (decile bins)",
        yaxis_title="human rating",
        **LAYOUT,
    )
    return figure.to_json()


def distribution(data: MetricOnDataset) -> str:
    figure = go.Figure(go.Histogram(x=data.all_scores, nbinsx=40))
    figure.update_layout(
        title=f"Distribution of {data.metric_name} over the dataset's captions",
        xaxis_title=data.metric_name,
        yaxis_title="captions",
        **LAYOUT,
    )
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
        title=f"{metric_name}: pairwise accuracy by category (95% intervals)",
        yaxis_title="accuracy %",
        yaxis_range=[0, 100],
        **LAYOUT,
    )
    return figure.to_json()
