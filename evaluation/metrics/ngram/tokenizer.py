"""PTB tokenisation exactly as pycocoevalcap does it: the Stanford PTBTokenizer (CoreNLP 3.4.1)
with -preserveLines -lowerCase, then 17 punctuation tokens dropped (metrics.md §0).

Each distinct text goes through the JVM once per call; results are kept in a bounded cache, so a
dataset's references are tokenised once per process."""

from __future__ import annotations

import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from evaluation.metrics.base import MetricUnavailable
from evaluation.metrics.ngram.java import coco_resource, java_executable

PUNCTUATION = frozenset(
    {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"}
)
# Characters the tokenizer would read as a line end: they would shift every later line.
LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\u2028": " ", "\u2029": " ", "\x85": " ", "\x0b": " ", "\x0c": " "})
CACHE_SIZE = 500_000


class PTBTokenizer:
    def __init__(self) -> None:
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def tokenize(self, texts: Iterable[str]) -> list[str]:
        texts = list(texts)
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            fresh = dict(zip(missing, self._run(missing), strict=True)) if missing else {}
            result = [fresh[text] if text in fresh else self._cache[text] for text in texts]
            for text in dict.fromkeys(texts):  # most recently used last
                if text in self._cache:
                    self._cache.move_to_end(text)
            self._cache.update(fresh)
            while len(self._cache) > CACHE_SIZE:  # only after the answer is built
                self._cache.popitem(last=False)
            return result

    def _run(self, texts: list[str]) -> list[str]:
        jar = coco_resource("tokenizer/stanford-corenlp-3.4.1.jar")
        with tempfile.TemporaryDirectory(prefix="capbench-ptb-") as folder:
            source = Path(folder) / "captions.txt"
            source.write_text("\n".join(t.translate(LINE_BREAKS) for t in texts), encoding="utf-8")
            command = [
                java_executable(),
                "-cp",
                str(jar),
                "edu.stanford.nlp.process.PTBTokenizer",
                "-preserveLines",
                "-lowerCase",
                str(source),
            ]
            try:
                done = subprocess.run(command, capture_output=True, check=True, timeout=600)
            except FileNotFoundError as error:
                raise MetricUnavailable(f"Java could not be started: {error}") from None
            except subprocess.CalledProcessError as error:
                raise RuntimeError(f"PTBTokenizer failed: {error.stderr.decode(errors='replace')[-500:]}") from None
        lines = done.stdout.decode("utf-8").split("\n")
        if len(lines) < len(texts):
            raise RuntimeError(f"PTBTokenizer returned {len(lines)} lines for {len(texts)} captions")
        return [" ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATION) for line in lines[: len(texts)]]


_shared = PTBTokenizer()


def ptb_tokenize(texts: Iterable[str]) -> list[str]:
    return _shared.tokenize(texts)
