"""Work a test needs from another process, started when the session starts (issue 15: suite time).

A few tests spend minutes in a subprocess that depends on nothing the session does: mypy over the
code base, pycocoevalcap's scores for the Flickr8k rows. CI's machine has two cores and the test
session keeps about one busy, so those subprocesses run one after another (niced) on the other,
started as soon as collection ends, while the rest of the suite runs. The tests that wait for them are marked
``@pytest.mark.background("name")``, run last (tests/conftest.py) and read the finished process
through the ``background`` fixture; a test run alone waits for its own job, as it would have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.judgment_data import judgment_data

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Job:
    command: list[str]
    timeout: float
    output: Path | None = None  # a file the command writes, read by the test
    done: threading.Event = field(default_factory=threading.Event)
    result: subprocess.CompletedProcess | None = None
    error: str = ""


def _python(*arguments: str) -> list[str]:
    return [sys.executable, *arguments]


def _oracle(folder: Path, source_format: str) -> tuple[list[str], Path]:
    output = folder / f"ngram-oracle-{source_format}.json"
    data = judgment_data() / "flickr8k"
    return _python("-m", "tests.evaluation.metrics.ngram_oracle", source_format, str(data), str(output)), output


def _reproduce(dataset: str, data: str, *options: str) -> tuple[list[str], None]:
    return _python("manage.py", "reproduce", dataset, str(judgment_data() / data), *options), None


# name -> (command, the file it writes) given a folder for its output; and its time limit in seconds
# (several times what each takes here: a job past it fails its test instead of holding the session).
COMMANDS: dict[str, tuple[Callable[[Path], tuple[list[str], Path | None]], float]] = {
    "mypy": (lambda folder: (_python("-m", "mypy", "--cache-dir", ".mypy_cache"), None), 400),
    "ngram-oracle:flickr8k-expert": (lambda folder: _oracle(folder, "flickr8k-expert"), 300),
    "ngram-oracle:flickr8k-cf": (lambda folder: _oracle(folder, "flickr8k-cf"), 600),
    "reproduce:flickr8k-expert": (lambda _: _reproduce("flickr8k-expert", "flickr8k", "--replicates", "200"), 300),
    "reproduce:flickr8k-cf": (lambda _: _reproduce("flickr8k-cf", "flickr8k", "--replicates", "200"), 600),
    "reproduce:pascal50s": (lambda _: _reproduce("pascal50s", "pascal50s", "--draws", "2"), 300),
    "reproduce:msvd-eval": (
        lambda _: _reproduce("msvd-eval", "msvd_eval", "--replicates", "200", "--metrics", "bleu_4,cider_d"),
        300,
    ),
}


class Background:
    """Runs the named jobs in order, one at a time, in a thread of the test session."""

    def __init__(self, names: list[str], folder: Path) -> None:
        unknown = [name for name in names if name not in COMMANDS]
        assert not unknown, f"no background job named {unknown}; known: {sorted(COMMANDS)}"
        self.folder = folder
        # The environment as collection left it: tests change os.environ while the jobs start.
        self._environment = dict(os.environ)
        self._stopping = threading.Event()
        self._running: subprocess.Popen | None = None
        self.jobs: dict[str, Job] = {}
        for name in names:
            build, timeout = COMMANDS[name]
            command, output = build(folder)
            self.jobs[name] = Job(command, timeout, output)
        self._thread = threading.Thread(target=self._run_all, name="test-background", daemon=True)
        self._thread.start()

    def _run_all(self) -> None:
        for job in self.jobs.values():
            try:
                if self._stopping.is_set():
                    job.error = "the session ended first"
                    continue
                self._run(job)
            except Exception as error:  # reported by the test that waits for it
                job.error = repr(error)
            finally:
                job.done.set()

    def _run(self, job: Job) -> None:
        # `nice` below the session's own priority: the tests in the foreground set the pace.
        process = subprocess.Popen(
            ["nice", "-n", "10", *job.command],
            cwd=ROOT,
            env=self._environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._running = process
        try:
            stdout, stderr = process.communicate(timeout=job.timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            job.error = f"still running after {job.timeout:.0f} s: killed"
            return
        finally:
            self._running = None
        job.result = subprocess.CompletedProcess(job.command, process.returncode, stdout, stderr)

    def wait(self, name: str) -> Job:
        assert name in self.jobs, f"background job {name!r} was not started: is the test marked for it?"
        job = self.jobs[name]
        started = time.monotonic()
        total = sum(other.timeout for other in self.jobs.values())
        while not job.done.wait(timeout=5):  # each job has its own limit; this one guards the thread itself
            assert time.monotonic() - started < total + 60, f"background job {name!r} never finished"
        assert not job.error, f"background job {name!r} did not finish: {job.error}"
        return job

    def close(self) -> None:
        """At the session's end (also after -x or a failure): no further job starts, a running one
        is stopped, and the jobs' files go."""
        self._stopping.set()
        running = self._running
        if running is not None and running.poll() is None:
            running.terminate()
            try:
                running.wait(timeout=10)
            except subprocess.TimeoutExpired:
                running.kill()
        self._thread.join(timeout=15)
        shutil.rmtree(self.folder, ignore_errors=True)
