"""CapBench's caption metrics and meta-evaluation (docs/library.md). Never imports Django.

The calls for a researcher's own scripts, each loaded when first used (importing a part of the
library, e.g. `capbench_eval.metrics`, loads only that part):

- `score(metric, candidates, references)`: per-caption scores, the system's number as CapBench's
  boards form it with its 95% interval, and the metric's signature (capbench_eval.library);
- `correlate(scores, judgments, protocol=...)`: agreement with human judgments (capbench_eval.library);
- `COCOEvalCap`: a drop-in for pycocoevalcap's, with the same numbers (capbench_eval.coco);
- `signature(metric)`: a metric version's readable signature (capbench_eval.signatures).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from capbench_eval.version import VERSION

if TYPE_CHECKING:
    from capbench_eval.coco import COCOEvalCap
    from capbench_eval.library import Correlation, Scores, correlate, score
    from capbench_eval.signatures import signature

__version__ = VERSION
__all__ = ["COCOEvalCap", "Correlation", "Scores", "__version__", "correlate", "score", "signature"]

_HOMES = {
    "score": "capbench_eval.library",
    "correlate": "capbench_eval.library",
    "Scores": "capbench_eval.library",
    "Correlation": "capbench_eval.library",
    "signature": "capbench_eval.signatures",
    "COCOEvalCap": "capbench_eval.coco",
}


def __getattr__(name: str) -> object:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'capbench_eval' has no attribute {name!r}")
