"""Metrics that look at pictures beyond one CLIP pass: the text-to-image cycle score, CAMScore,
HICE-S and RefHICE-S."""

from capbench_eval.metrics.vision import camscore, cycle, hice  # noqa: F401  (registers the metrics)
