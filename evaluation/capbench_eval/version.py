"""The library's version: in every metric signature (capbench_eval.signatures), read by
evaluation/pyproject.toml."""

VERSION = "0.1.0"
