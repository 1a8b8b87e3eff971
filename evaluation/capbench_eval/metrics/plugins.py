"""Metrics from outside the library: `CAPBENCH_METRIC_PLUGINS=package.module,other.module` names
modules whose import registers more metrics (`@register("my_metric")`), in every process that
loads the registry (web, planner and workers alike)."""

from __future__ import annotations

import importlib

from capbench_eval import config


def load_plugins() -> list[str]:
    names = config.env.metric_plugins
    for name in names:
        importlib.import_module(name)
    return names
