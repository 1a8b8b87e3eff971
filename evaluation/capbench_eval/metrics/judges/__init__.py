"""Language-model judges: G-VEval, VisCE², CLAIR, FLEUR (metrics.md §13–16)."""

from capbench_eval.metrics.judges import clair, fleur, gveval, visce2  # noqa: F401  (registers)
