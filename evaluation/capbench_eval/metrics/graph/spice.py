"""SPICE 1.0 (metrics.md §5) through the jar pycocoevalcap ships, on PTB-tokenised text, with the
Stanford CoreNLP 3.6.0 jars provisioned in the model store (the jar would otherwise download them,
which these machines cannot).

The CoreNLP jars go on an explicit classpath (the wheel's folder is never written to). SPICE's
`-cache` crashes on Java >= 16 (FST serialisation), so it runs without it; pinned here, untested
against a real CoreNLP on our machines because none can be provisioned here."""

from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from capbench_eval.backbones.store import model_dir
from capbench_eval.metrics.base import CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.java import coco_resource, java_executable
from capbench_eval.metrics.registry import register

CORENLP_FOLDER = "stanford-corenlp-3.6.0"
CORENLP_JARS = ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar")


def corenlp_jars() -> list[Path]:
    folder = model_dir() / CORENLP_FOLDER
    missing = [name for name in CORENLP_JARS if not (folder / name).is_file()]
    if missing:
        raise MetricUnavailable(
            f"Stanford CoreNLP 3.6.0 is not provisioned: {', '.join(missing)} missing from {folder} "
            "(take them from stanford-corenlp-full-2015-12-09.zip on a machine with network)"
        )
    return [folder / name for name in CORENLP_JARS]


@register("spice")
class Spice(Metric):
    slug = "spice"
    name = "SPICE"
    family = "graph"
    cost = 5.0  # a CoreNLP parse of every caption and reference: the slowest of the cpu queue's metrics
    citation = "P. Anderson, B. Fernando, M. Johnson and S. Gould (2016). SPICE. ECCV."
    description = "F-score of scene-graph tuples (objects, attributes, relations) parsed from candidate and references."

    def __init__(self, heap: str = "8G") -> None:
        self.heap = heap

    def config(self) -> dict:
        return {"jar": "spice-1.0", "corenlp": "3.6.0", "synsets": True, "tokenizer": "ptb-corenlp-3.4.1"}

    def unavailable_reason(self) -> str | None:
        try:
            self._classpath()
            java_executable()
        except MetricUnavailable as error:
            return str(error)
        return None

    def _classpath(self) -> str:
        jar = coco_resource("spice/spice-1.0.jar")
        libraries = sorted((jar.parent / "lib").glob("*.jar"))
        return os.pathsep.join(str(path) for path in [jar, *corenlp_jars(), *libraries])

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        classpath = self._classpath()
        corpus = shared_corpus.get(rows)
        with tempfile.TemporaryDirectory(prefix="capbench-spice-") as folder:
            source, target = Path(folder) / "input.json", Path(folder) / "output.json"
            source.write_text(
                json.dumps(
                    [
                        {"image_id": index, "test": candidate, "refs": list(references)}
                        for index, (candidate, references) in enumerate(
                            zip(corpus.candidates, corpus.references, strict=True)
                        )
                    ]
                )
            )
            command = [
                java_executable(),
                f"-Xmx{self.heap}",
                "-cp",
                classpath,
                "edu.anu.spice.SpiceScorer",
                str(source),
                "-out",
                str(target),
                "-subset",
                "-silent",
            ]
            done = subprocess.run(command, capture_output=True, timeout=24 * 3600)
            if done.returncode != 0 or not target.exists():
                raise RuntimeError(f"SPICE failed ({done.returncode}): {done.stderr.decode(errors='replace')[-800:]}")
            results = {entry["image_id"]: entry["scores"] for entry in json.loads(target.read_text())}
        distinct = [_f(results[index]["All"]) for index in range(len(corpus.candidates))]
        details = [
            {name: _f(value) for name, value in results[index].items()} for index in range(len(corpus.candidates))
        ]
        scores = corpus.expand(distinct)
        # pycocoevalcap reports the plain mean, NaN as soon as one caption has no tuples.
        mean = sum(scores) / len(scores) if scores else None
        return MetricResult(scores=scores, corpus=mean, details=corpus.expand(details))


def _f(block: dict) -> float:
    value = block.get("f")
    if not isinstance(value, str | int | float):  # null or missing
        return math.nan
    try:
        return float(value)
    except ValueError:
        return math.nan
