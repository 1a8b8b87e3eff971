"""Scene-graph metrics."""

from evaluation.metrics.graph import spice  # noqa: F401  (registration)
