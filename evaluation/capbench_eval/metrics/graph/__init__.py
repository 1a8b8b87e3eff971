"""Scene-graph metrics."""

from capbench_eval.metrics.graph import spice  # noqa: F401  (registration)
