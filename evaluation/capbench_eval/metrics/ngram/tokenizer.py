"""PTB tokenisation exactly as pycocoevalcap does it: the Stanford PTBTokenizer (CoreNLP 3.4.1)
with -preserveLines -lowerCase, then 17 punctuation tokens dropped (metrics.md §0).

Each distinct text goes through the JVM once per call (on its standard input); results are kept in
a bounded cache, so a dataset's references are tokenised once per process. A worker process warms
the tokenizer (`warm`): from then on the next call's JVM is started as soon as a call ends, and waits."""

from __future__ import annotations

import os
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterable

from capbench_eval.metrics.base import MetricUnavailable
from capbench_eval.metrics.ngram.java import coco_resource, java_executable

PUNCTUATION = frozenset(
    {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-", "--", "...", ";"}
)
# Characters the tokenizer would read as a line end: they would shift every later line.
LINE_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\u2028": " ", "\u2029": " ", "\x85": " ", "\x0b": " ", "\x0c": " "})
CACHE_SIZE = 500_000
# Each call's JVM lives for one call: HotSpot's first compiler alone (C1) compiles quickly enough
# to pay off within it, where the optimising one (C2) spends a second core on code that is thrown
# away. 30,000 captions: 0.82 s wall and 1.28 s of CPU with both, 0.52 s wall and 0.58 s of CPU
# with C1 alone; 10 captions: 0.17 s either way; the same tokens (docs/performance.md, "Java
# options"). A JVM that does not know the option (not HotSpot) is told to ignore it.
JVM_OPTIONS = ("-XX:+IgnoreUnrecognizedVMOptions", "-XX:TieredStopAtLevel=1")


class PTBTokenizer:
    def __init__(self) -> None:
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        # Once `warm` was called (a worker process): a JVM started ahead and waiting for the next
        # call's text on its standard input, so that a call pays for tokenising, not for starting
        # Java. (One JVM for every call would have to be fed without an end of input, and the
        # tokenizer reads on past a line's end where a quoted attribute of "<a href='" is open.)
        self._keep_standby = False
        self._standby: subprocess.Popen[bytes] | None = None
        self._standby_pid = 0

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

    def warm(self) -> None:
        """Java checked (MetricUnavailable, as a call would raise) and from now on a JVM kept
        started for the next call."""
        with self._lock:
            if self._keep_standby:
                return
            self._keep_standby = True
            try:
                self._run(["A warm-up line."])
            except BaseException:
                self._keep_standby = False
                raise

    def _run(self, texts: list[str]) -> list[str]:
        text = "\n".join(t.translate(LINE_BREAKS) for t in texts).encode("utf-8")
        process = self._take_standby() or self._start()
        try:
            output, errors = process.communicate(text, timeout=600)
        except BaseException:  # a time limit, an interrupt: no JVM left behind
            process.kill()
            process.wait()
            raise
        finally:
            if self._keep_standby:
                self._standby_start()
        if process.returncode != 0:
            raise RuntimeError(f"PTBTokenizer failed: {errors.decode(errors='replace')[-500:]}")
        lines = output.decode("utf-8").split("\n")
        if len(lines) < len(texts):
            raise RuntimeError(f"PTBTokenizer returned {len(lines)} lines for {len(texts)} captions")
        return [" ".join(w for w in line.rstrip().split(" ") if w not in PUNCTUATION) for line in lines[: len(texts)]]

    @staticmethod
    def _start() -> subprocess.Popen[bytes]:
        """The tokenizer reading its standard input to the end (what it reads from a file alike)."""
        jar = coco_resource("tokenizer/stanford-corenlp-3.4.1.jar")
        command = [
            java_executable(),
            *JVM_OPTIONS,
            "-cp",
            str(jar),
            "edu.stanford.nlp.process.PTBTokenizer",
            "-preserveLines",
            "-lowerCase",
        ]
        try:
            return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as error:
            raise MetricUnavailable(f"Java could not be started: {error}") from None

    def _standby_start(self) -> None:
        try:
            self._standby, self._standby_pid = self._start(), os.getpid()
        except MetricUnavailable:
            self._standby = None  # the next call starts its own, and says why it cannot

    def _take_standby(self) -> subprocess.Popen[bytes] | None:
        process, self._standby = self._standby, None
        if process is None:
            return None
        if self._standby_pid != os.getpid():
            # Inherited through fork: the parent's JVM, whose input only the parent may write.
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
            return None
        if process.poll() is not None:  # it stopped while waiting (killed): start another
            return None
        return process


def warm() -> None:
    """`PTBTokenizer.warm` on the tokenizer every metric shares."""
    _shared.warm()


_shared = PTBTokenizer()


def ptb_tokenize(texts: Iterable[str]) -> list[str]:
    return _shared.tokenize(texts)
