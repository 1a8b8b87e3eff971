"""The metric registry and every metric family."""
from evaluation.metrics import ngram  # noqa: F401  (registers the n-gram metrics)
from evaluation.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from evaluation.metrics.registry import get, register, slugs

__all__ = ["CaptionRow", "Metric", "MetricResult", "MetricUnavailable", "get", "register", "slugs"]
