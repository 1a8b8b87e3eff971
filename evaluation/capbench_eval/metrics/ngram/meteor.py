"""METEOR 1.5 through the jar pycocoevalcap ships (metrics.md §2): one long-lived JVM per process
(`-stdio -l en -norm`), a lock around each batch, restarted once if it died.

Each distinct (candidate, references) row is aligned once (`SCORE` lines, written by a feeder
thread while the answers are read, so the pipes never fill up); one `EVAL` over every row's
statistics, duplicates included, gives the per-row scores and the corpus METEOR that Meteor
aggregates itself, as the reference reports it.

A system's METEOR over rows scored in other batches (and each bootstrap replicate of it) is Meteor's
corpus score of their summed statistics, computed here (`meteor_from_totals`, the scorer's formula
with the `-l en` "rank" task's parameters): no JVM, and equal to Meteor's own EVAL to 1e-16
(tests/evaluation/metrics/test_ngram.py). Meteor's aggregate counts no fragmentation chunk for a
row that matched its reference exactly (one chunk, every word): `meteor_caption_totals` drops it,
without which a corpus holding exact matches drifts from Meteor's by up to a few points."""

from __future__ import annotations

import os
import random
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from typing import IO

import numpy as np

from capbench_eval.metrics.base import CORPUS, CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.java import coco_resource, java_executable
from capbench_eval.metrics.ngram.tokenizer import warm as tokenizer_warm
from capbench_eval.metrics.registry import register

JAR = "meteor/meteor-1.5.jar"
# Made-up rows a warm-up scores: enough for the JVM to compile its hot paths before the first batch
# (5,000 Flickr8k rows then took 6 to 7 s of the JVM's CPU, against about 8 s after 300 made-up rows).
WARM_ROWS = 2000
WARM_TEXT = (
    "a an the man woman boy girl dog dogs cat people child two three red blue black white brown small large "
    "is are runs running sits sitting plays playing jumps jumping stands walks on in at with through near "
    "grass water snow street beach field ball toy shirt jacket hat camera bike wall"
)


def compact_statistics(line: str) -> str:
    """Meteor prints its statistics, all counts, as "6.0 4.0 3.0 …": stored on every METEOR score
    row, the ".0" of each is half the line (docs/performance.md). Dropped where the number is whole;
    any other field is kept as printed, so Meteor reads back the same doubles."""
    return " ".join(field[:-2] if field.endswith(".0") and field[:-2].isdigit() else field for field in line.split(" "))


class MeteorProcess:
    def __init__(self, heap: str = "2G") -> None:
        self.heap = heap
        self._process: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the process that started the JVM: only it may talk to it
        self._errors: IO[bytes] | None = None
        self._lock = threading.Lock()

    def warm(self, rows: int = WARM_ROWS) -> None:
        """The JVM started, its resources loaded and its hot paths compiled, on made-up rows whose
        scores are dropped (each SCORE line is scored on its own: nothing of them stays)."""
        draw, words = random.Random(0), WARM_TEXT.split()

        def sentence() -> str:
            return " ".join(draw.choice(words) for _ in range(draw.randint(6, 14)))

        candidates = [sentence() for _ in range(rows)]
        references = [[sentence() for _ in range(4)] for _ in range(rows)]
        self.score(candidates, references, range(rows))

    def start(self) -> None:
        """The JVM started now, without waiting for it: it loads its resources (about 10 s of CPU,
        most of it the paraphrase table) while the caller does other work."""
        with self._lock:
            self._running()

    def score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]], expand: Sequence[int]
    ) -> tuple[list[float], float, list[str]]:
        """Scores of rows `expand[i]` of the distinct rows, the corpus score over them and each
        row's statistics line."""
        with self._lock:
            try:
                return self._score(candidates, references, expand)
            except (BrokenPipeError, ValueError, OSError):
                self._stop()  # the JVM died or answered garbage: one fresh start, one retry
                return self._score(candidates, references, expand)
            except BaseException:
                self._stop()  # interrupted mid-exchange (a time limit): unread answers would shift the next
                raise

    def _score(
        self, candidates: Sequence[str], references: Sequence[Sequence[str]], expand: Sequence[int]
    ) -> tuple[list[float], float, list[str]]:
        process = self._running()
        lines = [
            " ||| ".join(("SCORE", " ||| ".join(refs), cand.replace("|||", "").replace("  ", " ")))
            for cand, refs in zip(candidates, references, strict=True)
        ]
        stats = self._exchange(process, lines)
        # Meteor's own aggregation over every row's statistics (a field-wise sum of the printed
        # statistics in Python drifts by ~1e-5 from it, so the corpus number comes from Meteor).
        answers = self._exchange(
            process, ["EVAL ||| " + " ||| ".join(stats[i] for i in expand)], expected=len(expand) + 1
        )
        values = [float(answer) for answer in answers]
        return values[:-1], values[-1], [compact_statistics(stats[i]) for i in expand]

    def _exchange(self, process: subprocess.Popen[bytes], lines: list[str], expected: int | None = None) -> list[str]:
        assert process.stdout is not None  # (started with stdout=PIPE)
        feeder = threading.Thread(target=self._feed, args=(process, lines), daemon=True)
        feeder.start()
        answers = []
        for _ in range(expected if expected is not None else len(lines)):
            answer = process.stdout.readline()
            if not answer:
                raise BrokenPipeError(f"METEOR stopped answering: {self._error_tail()}")
            answers.append(answer.decode().strip())
        feeder.join()
        return answers

    @staticmethod
    def _feed(process: subprocess.Popen[bytes], lines: list[str]) -> None:
        assert process.stdin is not None  # (started with stdin=PIPE)
        try:
            for line in lines:
                process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # the reader sees the closed stdout and reports

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._pid != os.getpid():
            # Inherited through fork: the parent's JVM. Two processes on one pipe would read each
            # other's answers, so this one starts its own and leaves that one to its parent.
            self._process, self._errors = None, None
        if self._process is None or self._process.poll() is not None:
            jar = coco_resource(JAR)
            self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process; closed in _stop)
            self._process = subprocess.Popen(
                [java_executable(), "-jar", f"-Xmx{self.heap}", jar.name, "-", "-", "-stdio", "-l", "en", "-norm"],
                cwd=jar.parent,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
            )
            self._pid = os.getpid()
        return self._process

    def _error_tail(self) -> str:
        if self._errors is None:
            return ""
        self._errors.seek(0)
        return self._errors.read().decode(errors="replace")[-500:]

    def _stop(self) -> None:
        if self._process is not None and self._pid == os.getpid():  # never the parent's (see _running)
            self._process.kill()
            self._process.wait()
        self._process = None

    def close(self) -> None:
        with self._lock:
            self._stop()


@register("meteor")
class Meteor(Metric):
    slug = "meteor"
    name = "METEOR"
    family = "ngram"
    aggregation = CORPUS
    version = "1.5"
    cost = 1.5  # a warm JVM, bench/pipeline.py; BLEU's four orders together take about 0.6
    # One JVM scoring a 5,000-caption submission in one go (about 6 s) while the other worker
    # processes take the quick metrics beats two JVMs contending for the same cores (bench/pipeline.py).
    batch_size = 5000
    citation = "M. Denkowski and A. Lavie (2014). Meteor Universal. WMT."
    description = "Unigram alignment with stems, synonyms and paraphrases, and a fragmentation penalty (Meteor 1.5)."

    def __init__(self) -> None:
        self.process = MeteorProcess()

    def config(self) -> dict:
        return {"jar": "meteor-1.5", "language": "en", "norm": True, "tokenizer": "ptb-corenlp-3.4.1"}

    def start(self) -> None:
        """The JVM started now, loading while the caller does other work (tokenising, say)."""
        self.process.start()

    def warm(self) -> None:
        tokenizer_warm()
        self.process.warm()

    def unavailable_reason(self) -> str | None:
        try:
            java_executable()
            coco_resource(JAR)
        except MetricUnavailable as error:
            return str(error)
        return None

    def score(self, rows: Sequence[CaptionRow], context: object | None = None) -> MetricResult:
        corpus = shared_corpus.get(rows)
        scores, total, statistics = self.process.score(corpus.candidates, corpus.references, corpus.row_to_distinct)
        return MetricResult(scores=scores, corpus=total, statistics=statistics)

    def caption_totals(self, scores: np.ndarray, statistics: Sequence | None) -> np.ndarray:
        return meteor_caption_totals(statistics)

    def from_totals(self, totals: np.ndarray) -> np.ndarray:
        return meteor_from_totals(totals)


# Meteor 1.5's scorer for `-l en` (task "rank", docs/metrics.md §2): α, β, γ, δ and the weights of
# its four matching stages (exact, stem, synonym, paraphrase).
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.20, 0.60, 0.75
STAGE_WEIGHTS = np.array([1.0, 0.6, 0.8, 0.6])
# A statistics line: test and reference length, their function words, per stage (test content,
# reference content, test function, reference function) matches, chunks, test and reference matches.
FIELDS = 23
CHUNKS, TEST_MATCHES, REFERENCE_MATCHES = 20, 21, 22


def meteor_caption_totals(statistics: Sequence | None) -> np.ndarray:
    """(rows × 23) the statistics lines as numbers, as Meteor's aggregate sums them: a row that
    matched its reference exactly (every word, one chunk) counts no chunk."""
    if statistics is None or any(not isinstance(line, str) for line in statistics):
        raise ValueError("corpus METEOR needs the per-row statistics lines")
    rows = np.array([line.split() for line in statistics], dtype=float).reshape(len(statistics), FIELDS)
    exact = (rows[:, TEST_MATCHES] == rows[:, 0]) & (rows[:, REFERENCE_MATCHES] == rows[:, 1]) & (rows[:, CHUNKS] == 1)
    rows[exact, CHUNKS] = 0
    return rows


def meteor_from_totals(totals: np.ndarray) -> np.ndarray:
    """Meteor's score of each row of (n × 23) summed statistics: δ-weighted precision and recall of
    the stage-weighted matches, their α-weighted harmonic mean, times 1 − γ·(chunks / mean
    matches)^β; 0 where nothing matched."""
    totals = np.atleast_2d(np.asarray(totals, dtype=float))
    stages = totals[:, 4:CHUNKS].reshape(len(totals), 4, 4)
    test_matched = (STAGE_WEIGHTS * (DELTA * stages[:, :, 0] + (1 - DELTA) * stages[:, :, 2])).sum(axis=1)
    reference_matched = (STAGE_WEIGHTS * (DELTA * stages[:, :, 1] + (1 - DELTA) * stages[:, :, 3])).sum(axis=1)
    test_length = DELTA * (totals[:, 0] - totals[:, 2]) + (1 - DELTA) * totals[:, 2]
    reference_length = DELTA * (totals[:, 1] - totals[:, 3]) + (1 - DELTA) * totals[:, 3]
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = test_matched / test_length, reference_matched / reference_length
        f_mean = precision * recall / (ALPHA * precision + (1 - ALPHA) * recall)
        fragmentation = totals[:, CHUNKS] / ((totals[:, TEST_MATCHES] + totals[:, REFERENCE_MATCHES]) / 2)
    fragmentation = np.where(totals[:, CHUNKS] == 0, 0.0, fragmentation)
    score = f_mean * (1 - GAMMA * fragmentation**BETA)
    return np.where((precision > 0) & (recall > 0), np.maximum(score, 0.0), 0.0)
