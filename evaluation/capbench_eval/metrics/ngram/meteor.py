"""METEOR 1.5 through the jar pycocoevalcap ships (metrics.md §2): one long-lived JVM per process
(`-stdio -l en -norm`), a lock around each batch, restarted once if it died. It is started on the
paraphrase pairs its batch's words can match (paraphrases.py: the same scores, a second to load
instead of ten), and again on a wider cut for a batch with other words; after CUTS such starts, or
once warmed up for a worker, on the whole table.

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
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import IO

import numpy as np

from capbench_eval.metrics.base import CORPUS, CaptionRow, Metric, MetricResult, MetricUnavailable
from capbench_eval.metrics.ngram.corpus import shared_corpus
from capbench_eval.metrics.ngram.java import coco_resource, java_executable
from capbench_eval.metrics.ngram.paraphrases import build_index_soon, index_or_none, paraphrases_for
from capbench_eval.metrics.ngram.tokenizer import warm as tokenizer_warm
from capbench_eval.metrics.registry import register

JAR = "meteor/meteor-1.5.jar"
# JVMs a process starts on a cut of the paraphrase table (about a second to load each) before one with
# the whole table (10 s), for a process that keeps scoring new text.
CUTS = 4
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


def sent(candidate: str) -> str:
    """A candidate as a SCORE line holds it."""
    return candidate.replace("|||", "").replace("  ", " ")


def batch_tokens(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> frozenset[str]:
    """The tokens of a batch's SCORE lines, for which a JVM's cut of the paraphrase table is made."""
    return frozenset(chain.from_iterable(text.split() for text in chain(map(sent, candidates), *references)))


class MeteorProcess:
    def __init__(self, heap: str = "2G") -> None:
        self.heap = heap
        self._process: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the process that started the JVM: only it may talk to it
        self._errors: IO[bytes] | None = None
        self._lock = threading.Lock()
        # The tokens the running JVM's cut of the paraphrase table covers (paraphrases.py), None
        # for the whole table; how many JVMs were started on a cut; whether warmed (whole from then on).
        self._tokens: frozenset[str] | None = None
        self._cuts = 0
        self._whole_table = False
        self._table: Path | None = None  # the cut, removed once the JVM has read it

    def warm(self, rows: int = WARM_ROWS) -> None:
        """The JVM started with the whole paraphrase table (a warm JVM is for whatever comes), its
        resources loaded and its hot paths compiled, on made-up rows whose scores are dropped
        (each SCORE line is scored on its own: nothing of them stays)."""
        draw, words = random.Random(0), WARM_TEXT.split()

        def sentence() -> str:
            return " ".join(draw.choice(words) for _ in range(draw.randint(6, 14)))

        candidates = [sentence() for _ in range(rows)]
        references = [[sentence() for _ in range(4)] for _ in range(rows)]
        with self._lock:
            self._whole_table = True
            if self._tokens is not None:
                self._stop()  # a JVM on a cut: replaced by one with the whole table
        self.score(candidates, references, range(rows))

    def start(self, candidates: Sequence[str] = (), references: Sequence[Sequence[str]] = ()) -> None:
        """The JVM started now, without waiting for it to load, for the given rows (a JVM started on
        their cut of the paraphrase table, about a second to load) or, given none, for any text
        when it must load the whole table (about 10 s of CPU while the caller does other work):
        given none with the table's index built, nothing is started yet. Nothing if one is running."""
        with self._lock:
            if self._process is not None and self._pid == os.getpid() and self._process.poll() is None:
                return  # (a parent's JVM, inherited through fork, is not this process's: see _running)
            if candidates:
                self._running(batch_tokens(candidates, references))
            elif self._whole_table:
                self._running(None)
            elif index_or_none() is None:
                build_index_soon()  # for the runs after this one
                self._running(None)

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
        process = self._running(batch_tokens(candidates, references))
        lines = [
            " ||| ".join(("SCORE", " ||| ".join(refs), sent(cand)))
            for cand, refs in zip(candidates, references, strict=True)
        ]
        stats = self._exchange(process, lines)
        if stats:
            self._drop_table()  # read when the JVM started, before its first answer
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

    def _running(self, tokens: frozenset[str] | None) -> subprocess.Popen[bytes]:
        """The JVM for a batch of these tokens (None: any text). It is started on a cut of the
        paraphrase table (paraphrases.py) when the table's index is built: the batch's tokens and
        those of the batches before it in this process, so that a batch with a word the running
        JVM's cut lacks gets a new one; after CUTS of them, or once warmed, the whole table."""
        if self._process is not None and self._pid != os.getpid():
            # Inherited through fork: the parent's JVM. Two processes on one pipe would read each
            # other's answers, so this one starts its own and leaves that one to its parent.
            self._process, self._errors, self._table = None, None, None
        process = self._process
        covered = self._tokens is None or (tokens is not None and tokens <= self._tokens)
        if process is not None and process.poll() is None and covered:
            return process
        if tokens is not None and self._tokens is not None:
            tokens |= self._tokens  # (the cut it replaces, or that of a JVM that died)
        jar = coco_resource(JAR)
        command = [java_executable(), "-jar", f"-Xmx{self.heap}", jar.name, "-", "-", "-stdio", "-l", "en", "-norm"]
        self._stop()  # (the JVM whose cut fell short, or one that died: its pipes and files)
        cut = tokens is not None and not self._whole_table and self._cuts < CUTS
        self._table = paraphrases_for(tokens) if cut and tokens is not None else None
        self._tokens = tokens if self._table is not None else None
        if self._table is not None:
            self._cuts += 1
            command += ["-a", str(self._table)]
        self._errors = tempfile.TemporaryFile()  # noqa: SIM115 (lives as long as the process; closed in _stop)
        self._process = subprocess.Popen(
            command, cwd=jar.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors
        )
        self._pid = os.getpid()
        return self._process

    def _drop_table(self) -> None:
        if self._table is not None:
            shutil.rmtree(self._table.parent, ignore_errors=True)
            self._table = None

    def _error_tail(self) -> str:
        if self._errors is None:
            return ""
        self._errors.seek(0)
        return self._errors.read().decode(errors="replace")[-500:]

    def _stop(self) -> None:
        if self._pid == os.getpid():  # never the parent's (see _running)
            if self._process is not None:
                self._process.kill()
                self._process.wait()
            if self._errors is not None:
                self._errors.close()
            self._drop_table()
        self._process, self._errors, self._table = None, None, None

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

    def start(self, rows: Sequence[CaptionRow] = ()) -> None:
        """The JVM started now for these rows (MeteorProcess.start), loading while the caller does
        other work; the rows are tokenised first (kept for their scoring)."""
        if rows:
            corpus = shared_corpus.get(rows)
            self.process.start(corpus.candidates, corpus.references)
        else:
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
