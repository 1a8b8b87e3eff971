"""`make run`: the whole platform on one machine, stopped again with Ctrl-C.

Services (embedded unless DATABASE_URL / REDIS_URL are set) → migrate → the demo benchmark
(imported once; later runs find it unchanged) → an admin account (first run only) → a Celery
worker and the web server. Everything started here is stopped on SIGINT/SIGTERM, or when either
child exits on its own.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from celery import Celery

from capbench import embedded
from capbench.settings import variables
from capbench.settings.environment import services_record

ROOT = Path(__file__).resolve().parents[2]
DEMO_DATASET = ROOT / "demo" / "flickr8k-expert"
DEMO_SLUG = "flickr8k-expert-demo"
DEMO_TITLE = "Flickr8k-Expert (demo slice: 100 images)"
logger = logging.getLogger("capbench.run")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=_port, default=8000, help="the web server's port (make run PORT=8001)")
    parser.add_argument("--state-dir", type=Path, default=ROOT / ".capbench")
    parser.add_argument(
        "--demo-catalogue", type=Path, help="a JSON catalogue (datasets fetch --catalogue) for the online demo data"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[capbench] %(message)s")
    embedded.quiet_library_logs()
    state_dir = args.state_dir.resolve()
    refused = _port_refusal(args.host, args.port)
    if refused:
        # Before anything starts: a taken port would otherwise be found only after the database,
        # migrations and the demo import, half a minute later.
        logger.error("%s:%s %s", args.host, args.port, refused)
        return 1
    stop = _stop_on_signals()
    started = time.monotonic()
    with embedded.services(state_dir) as urls, _recorded(state_dir, urls):
        env = _child_env(urls, state_dir, (args.host, args.port))
        _manage(env, "migrate", "--noinput", "-v", "0")
        # Hashed, compressed names (WhiteNoise): browsers keep them for good; a new release renames them.
        _manage(env, "collectstatic", "--noinput", "-v", "0")
        password_line = _admin_ensure(env, state_dir)
        children = _start_children(env, args.host, args.port, state_dir)
        demo = DemoLoader(env, args.demo_catalogue)
        try:
            home = f"http://{args.host}:{args.port}/"
            if _web_wait(home, children, stop):
                demo.start()  # the demo is imported and scored behind the serving site, its progress logged
                logger.info(
                    "CapBench is serving on %s after %.0f s (Ctrl-C stops everything)", home, time.monotonic() - started
                )
                logger.info(password_line)
            worker = _worker_ping(urls["REDIS_URL"])
            while not stop["requested"] and not _exited(children):
                if worker is not None and worker.ready():
                    logger.info("worker answered a ping task")
                    worker = None
                time.sleep(0.2)
            exited = _exited(children)
        finally:
            demo.stop()
            _stop_children(children)
    if exited and not stop["requested"]:
        # e.g. the port is taken: say which part gave up instead of ending quietly
        logger.error(
            "the %s exited on its own (code %s); everything else was stopped",
            exited[0],
            children[CHILD_NAMES.index(exited[0])].returncode,
        )
        return 1
    return 0


class DemoLoader:
    """The demo benchmarks, loaded in the background once the site serves (each step a `manage.py`
    command, so its output is the same as typed by hand), after the registry's metrics are stored
    (`scoring metrics --summary`):

    - the shipped Flickr8k-Expert slice (100 images, expert ratings) for the metric boards;
    - THumB 1.0 on MSCOCO (5 real systems, 500 images, precision/recall ratings, pictures from COCO's
      own address): its repository names no licence, so CapBench does not ship it; it is fetched
      (pinned commit, sha256 checked) when this machine is online, and skipped with a note when not.

    Each is scored by the worker as soon as it is imported; later runs find both unchanged."""

    def __init__(self, env: dict[str, str], catalogue: Path | None) -> None:
        self.env, self.catalogue = env, catalogue
        self.running: subprocess.Popen | None = None
        self.stopping = False
        self.thread = threading.Thread(target=self._load, name="capbench-demo", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping = True
        if self.running is not None and self.running.poll() is None:
            self.running.terminate()
        if self.thread.is_alive():
            self.thread.join(timeout=20)

    def _load(self) -> None:
        # The registry's metrics stored first (a few seconds), so that the metric pages and the API
        # list them from the start instead of once the demo is planned.
        self._step("scoring", "metrics", "--summary")
        imported = self._step(
            "datasets", "import", "flickr8k-expert", str(DEMO_DATASET), "--slug", DEMO_SLUG, "--title", DEMO_TITLE
        )
        if imported:
            self._step("scoring", "score-dataset", DEMO_SLUG)
        fetch = ["datasets", "fetch", "thumb", *(["--catalogue", str(self.catalogue)] if self.catalogue else [])]
        if self._step(*fetch, quiet_failure=True):
            self._step("scoring", "score-dataset", "thumb")
            logger.info(
                "demo: THumB 1.0 (5 systems on MSCOCO) is on its board; its scores arrive as the worker computes them"
            )
        elif not self.stopping:
            logger.info(
                "demo: THumB 1.0 could not be fetched (offline?): the demo shows the Flickr8k-Expert slice; "
                "`python manage.py datasets fetch thumb` adds it later"
            )

    def _step(self, *command: str, quiet_failure: bool = False) -> bool:
        """One command, its lines logged as they come (a failure allowed to be quiet: its last line only)."""
        if self.stopping:
            return False
        self.running = subprocess.Popen(
            [sys.executable, str(ROOT / "manage.py"), *command],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        kept: list[str] = []  # a quiet step's lines, shown once it succeeded (a failure: its last line)
        assert self.running.stdout is not None
        for line in self.running.stdout:
            if not line.strip() or " %)" in line:  # a download's progress lines
                continue
            if quiet_failure:
                kept.append(line.strip())
            else:
                logger.info("demo: %s", line.strip())
        code = self.running.wait()
        for line in kept if code == 0 else kept[-1:]:
            logger.info("demo: %s", line)
        return code == 0


CHILD_NAMES = ("Celery worker", "web server")


def _port_refusal(host: str, port: int) -> str:
    """Why the web server could not listen on host:port (empty when it can). The check binds and
    lets go at once; what takes the port in the meantime still ends the run, with the web server's
    own message."""
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as error:
        return f"cannot be listened on: {error.strerror or error}"
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return "is taken: stop what serves there, or choose another port with make run PORT=8001"
            return f"cannot be listened on: {error.strerror or error}"
    return ""


def _port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1 to 65535)")
    return port


@contextlib.contextmanager
def _recorded(state_dir: Path, urls: dict[str, str]) -> Iterator[None]:
    """While the platform runs, `python manage.py …` from another terminal finds its services
    (capbench.settings reads <state>/services.json when DATABASE_URL / REDIS_URL are unset)."""
    path = services_record(state_dir, urls)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def _exited(children: list[subprocess.Popen]) -> list[str]:
    return [name for name, child in zip(CHILD_NAMES, children, strict=True) if child.poll() is not None]


def _stop_on_signals() -> dict[str, bool]:
    stop = {"requested": False}

    def request(signum: int, frame: object) -> None:
        stop["requested"] = True

    signal.signal(signal.SIGINT, request)
    signal.signal(signal.SIGTERM, request)
    return stop


def _child_env(urls: dict[str, str], state_dir: Path, served: tuple[str, int] = ("127.0.0.1", 8000)) -> dict[str, str]:
    """The children's environment. Links in citations, badges and mail (SITE_URL) name the address
    served (`make run PORT=8102`) unless CAPBENCH_SITE_URL says otherwise."""
    return {
        "CAPBENCH_SITE_URL": served_url(*served),
        **{name: value for name, value in os.environ.items() if name != "CAPBENCH_SITE_URL" or value.strip()},
        **urls,
        "DJANGO_SETTINGS_MODULE": "capbench.settings.local",
        "CAPBENCH_STATE_DIR": str(state_dir),
    }


def served_url(host: str, port: int) -> str:
    """http://host:port as a browser on this machine reaches it (a wildcard address: 127.0.0.1)."""
    host = host.strip("[]")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _manage(env: dict[str, str], *command: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *command], env=env, check=True)


def _admin_ensure(env: dict[str, str], state_dir: Path) -> str:
    """Create the `admin` account once; its password stays in <state>/admin-password.txt."""
    password_file = state_dir / "admin-password.txt"
    if not password_file.exists():
        password = secrets.token_urlsafe(12)
        _manage(
            {**env, "DJANGO_SUPERUSER_PASSWORD": password},
            "createsuperuser",
            "--noinput",
            "--username",
            "admin",
            "--email",
            "admin@localhost",
        )
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    return f"admin login: admin / {password_file.read_text().strip()} (from {password_file})"


def _start_children(env: dict[str, str], host: str, port: int, state_dir: Path) -> list[subprocess.Popen]:
    prefix = variables.env.queue_prefix
    # --beat runs the periodic reaper inside this single worker.
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "capbench",
            "worker",
            "--loglevel",
            "WARNING",  # the terminal shows what goes wrong, not every task
            "--queues",
            ",".join(prefix + kind for kind in ("cpu", "gpu", "api")),
            "--concurrency",
            "2",
            "--hostname",
            "capbench-run@%h",
            "--beat",
            "--schedule",
            str(state_dir / "celerybeat-schedule"),
        ],
        env=env,
        cwd=ROOT,
        start_new_session=True,  # its own process group: _stop_children ends its pool and beat with it
    )
    # The production server and its settings (capbench/gunicorn.py); `make dev` keeps runserver's reloader.
    if env.get("DJANGO_DEBUG", "").strip().lower() in {"1", "true", "yes", "on"}:
        command = [str(ROOT / "manage.py"), "runserver", f"{host}:{port}"]
    else:
        command = ["-m", "gunicorn", "-c", "python:capbench.gunicorn", "capbench.wsgi", "--bind", f"{host}:{port}"]
    web = subprocess.Popen([sys.executable, *command], env=env, cwd=ROOT, start_new_session=True)
    return [worker, web]


def _web_wait(home_url: str, children: list[subprocess.Popen], stop: dict[str, bool], seconds: float = 180) -> bool:
    """True once the web server answers its home page; False when a child exited or Ctrl-C came first."""
    deadline = time.monotonic() + seconds
    while not _answers(home_url):
        if stop["requested"] or any(child.poll() is not None for child in children):
            return False
        if time.monotonic() > deadline:
            raise RuntimeError(f"the web server did not answer within {seconds:.0f} s")
        time.sleep(0.3)
    return True


def _worker_ping(broker_url: str):
    """A ping task for the worker: its answer is logged when it comes (the site serves meanwhile)."""
    client = Celery("capbench-run", broker=broker_url, backend=broker_url)
    return client.send_task("capbench.ping", queue=variables.env.queue_prefix + "cpu")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def _stop_children(children: list[subprocess.Popen]) -> None:
    """Each child asked to stop (SIGTERM: Celery finishes its tasks, gunicorn its requests), then
    whatever is left of its process group killed: the worker's pool and embedded beat, gunicorn's
    workers. Without that, a beat process forked by a worker that was killed, or that stopped while
    beat was reconnecting, went on retrying the broker long after make run ended."""
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + 15
    for child in children:
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed below with what is left of its group
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
    for child in children:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)  # the group is the child's own (start_new_session)
        child.wait()
    logger.info("worker and web server stopped")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
