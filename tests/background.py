"""Work a test needs from another process, started when the session starts (issue 15: suite time).

A few tests spend minutes in a subprocess that depends on nothing the session does: mypy over the
code base, pycocoevalcap's scores for the Flickr8k rows. This machine has two cores and the test
session keeps one busy, so those subprocesses run one after another on the other core, started as
soon as collection ends, while the rest of the suite runs. The tests that wait for them are marked
``@pytest.mark.background("name")``, run last (tests/conftest.py) and read the finished process
through the ``background`` fixture; a test run alone waits for its own job, as it would have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@dataclass
class Job:
    command: list[str]
    timeout: float
    output: Path | None = None  # a file the command writes, read by the test
    done: threading.Event = field(default_factory=threading.Event)
    result: subprocess.CompletedProcess | None = None
    error: BaseException | None = None


def _python(*arguments: str) -> list[str]:
    return [sys.executable, *arguments]


def _oracle(folder: Path, source_format: str) -> tuple[list[str], Path]:
    output = folder / f"ngram-oracle-{source_format}.json"
    data = SHARED_DATA / "flickr8k"
    return _python("-m", "tests.evaluation.metrics.ngram_oracle", source_format, str(data), str(output)), output


def _reproduce(folder: Path, dataset: str, data: str, *options: str) -> tuple[list[str], None]:
    return _python("manage.py", "reproduce", dataset, str(SHARED_DATA / data), *options), None


# name -> (command, the file it writes) given a folder for its output; and its time limit in seconds
COMMANDS: dict[str, tuple[Callable[[Path], tuple[list[str], Path | None]], float]] = {
    "mypy": (lambda folder: (_python("-m", "mypy", "--cache-dir", ".mypy_cache"), None), 900),
    "ngram-oracle:flickr8k-expert": (lambda folder: _oracle(folder, "flickr8k-expert"), 900),
    "ngram-oracle:flickr8k-cf": (lambda folder: _oracle(folder, "flickr8k-cf"), 1800),
    "reproduce:flickr8k-expert": (
        lambda folder: _reproduce(folder, "flickr8k-expert", "flickr8k", "--replicates", "200"),
        900,
    ),
    "reproduce:flickr8k-cf": (
        lambda folder: _reproduce(folder, "flickr8k-cf", "flickr8k", "--replicates", "200"),
        1800,
    ),
    "reproduce:pascal50s": (lambda folder: _reproduce(folder, "pascal50s", "pascal50s", "--draws", "1"), 900),
}


class Background:
    """Runs the named jobs in order, one at a time, in a thread of the test session."""

    def __init__(self, names: list[str], folder: Path) -> None:
        unknown = [name for name in names if name not in COMMANDS]
        assert not unknown, f"no background job named {unknown}; known: {sorted(COMMANDS)}"
        self.folder = folder
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
                job.result = subprocess.run(
                    job.command,
                    cwd=ROOT,
                    env=dict(os.environ),
                    capture_output=True,
                    text=True,
                    timeout=job.timeout,
                    # below the session's own priority: the tests in the foreground set the pace
                    preexec_fn=lambda: os.nice(10),
                )
            except BaseException as error:  # noqa: BLE001  (reported by the test that waits for it)
                job.error = error
            finally:
                job.done.set()

    def wait(self, name: str) -> Job:
        assert name in self.jobs, f"background job {name!r} was not started: is the test marked for it?"
        job = self.jobs[name]
        job.done.wait()
        if job.error is not None:
            raise AssertionError(f"background job {name!r} did not finish: {job.error!r}") from job.error
        return job

    def close(self) -> None:
        """At the session's end: the jobs no test waited for are not waited for; their files go."""
        shutil.rmtree(self.folder, ignore_errors=True)
