"""Real Celery worker processes for end-to-end tests, on this run's queues and test database."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings


class Workers:
    def __init__(self, repo_root: Path, tmp_path: Path):
        self.repo_root, self.tmp_path, self.processes = repo_root, tmp_path, []

    def start(
        self,
        name: str,
        cwd: Path | None = None,
        *,
        kinds: tuple[str, ...] = ("cpu", "gpu", "api"),
        concurrency: int = 1,
        prefix: tuple[str, ...] = (),
        **env: str,
    ) -> subprocess.Popen:
        """A worker named `name`@test on the queues of `kinds`; `cwd` its working directory (the checkout by
        default); `prefix` a command it runs under (`ip netns exec NAME`: another network namespace)."""
        database = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + settings.DATABASES["default"]["NAME"])
        queues = ",".join(f"{settings.CAPBENCH_QUEUE_PREFIX}{kind}" for kind in kinds)
        environment = {
            **os.environ,
            "DATABASE_URL": database.geturl(),
            "DJANGO_SETTINGS_MODULE": "capbench.settings.test",
            "CAPBENCH_QUEUE_PREFIX": settings.CAPBENCH_QUEUE_PREFIX,
            "CAPBENCH_METRIC_PLUGINS": "tests.platform.scoring.plugins",
            "CELERY_VISIBILITY_TIMEOUT": "30",
            **env,
        }
        environment = {key: value for key, value in environment.items() if value is not None}
        log = (self.tmp_path / f"{name}-{len(self.processes)}.log").open("wb")
        process = subprocess.Popen(
            [
                *prefix,
                sys.executable,
                "-m",
                "celery",
                "-A",
                "capbench",
                "worker",
                "--queues",
                queues,
                "--concurrency",
                str(concurrency),
                "--hostname",
                f"{name}@test",
                "--loglevel",
                "INFO",
                "--without-gossip",
                "--without-mingle",
            ],
            env=environment,
            cwd=cwd or self.repo_root,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL to the worker and everything it started (pool children, JVMs)."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()

    def logs(self) -> str:
        return "\n".join(path.read_text(errors="replace")[-3000:] for path in sorted(self.tmp_path.glob("*.log")))


def wait_until(condition, seconds: float, workers: Workers, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {seconds:.0f} s; worker logs:\n{workers.logs()}")
