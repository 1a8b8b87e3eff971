"""The metric registry and every metric family."""

from evaluation.metrics import embedding, graph, judges, ngram, vision  # noqa: F401  (registers the metric families)
from evaluation.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from evaluation.metrics.plugins import load_plugins
from evaluation.metrics.registry import UnknownMetric, get, register, slugs

__all__ = ["CaptionRow", "Metric", "MetricResult", "MetricUnavailable", "UnknownMetric", "get", "register", "slugs"]

load_plugins()
