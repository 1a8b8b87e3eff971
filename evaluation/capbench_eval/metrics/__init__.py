"""The metric registry and every metric family."""

from capbench_eval.metrics import embedding, graph, judges, ngram, vision  # noqa: F401  (registers the metric families)
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.plugins import load_plugins
from capbench_eval.metrics.registry import UnknownMetric, get, register, slugs

__all__ = ["CaptionRow", "Metric", "MetricResult", "MetricUnavailable", "UnknownMetric", "get", "register", "slugs"]

load_plugins()
