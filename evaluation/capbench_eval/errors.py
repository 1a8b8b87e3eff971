"""The exceptions the library's packages share. A leaf module (it imports nothing of evaluation), so
the backbones can raise what the metrics raise without importing the metrics package."""

from __future__ import annotations


class MetricUnavailable(RuntimeError):
    """Raised by `score` when something the metric needs (weights, Java, CoreNLP, an API key) is
    missing. The message says what, so the platform can show it."""


class UnknownModel(KeyError):
    """No catalogue model has the name asked for (the message lists those that do). A KeyError, so
    callers catching that keep working; catch this one, so a KeyError from a bug is not taken for a
    bad name."""
