"""`make run` end to end on a machine without DATABASE_URL / REDIS_URL: embedded PostgreSQL and
Valkey, migrations, the demo benchmark, a worker and the web server; a second run reuses the data;
SIGINT stops everything it started."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for(url: str, process: subprocess.Popen, seconds: float = 240) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the runner exited early with {process.returncode}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.read().decode()
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s")


def _wait_for_line(log: Path, text: str, process: subprocess.Popen, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text():
        assert process.poll() is None, f"the runner exited early: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {text!r} within {seconds} s: {log.read_text()[-3000:]}"
        time.sleep(0.5)


def _thumb_catalogue(folder: Path) -> Path:
    """A catalogue whose `thumb` entry is served from this machine (file://): THumB-format files made
    here (5 systems x 12 COCO images, precision and recall), standing in for the online download."""
    import hashlib

    folder.mkdir(parents=True)
    systems = ["Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human"]
    words = ["dog", "cat", "bus", "kite", "boat", "horse", "train", "pizza", "clock", "bench", "zebra", "bear"]
    rows, refs = [], []
    for image, word in enumerate(words, start=1):
        name = f"COCO_val2014_{image:012d}.jpg"
        refs.append(
            {"seg_id": str(image), "set_id": image, "refs": [f"A {word} in a field.", f"The {word} stands still."]}
        )
        for rank, system in enumerate(systems):
            p, r = 1.0 + (rank + image) % 5, 1.0 + (rank * 2 + image) % 5
            rows.append(
                {
                    "SYS": system,
                    "seg_id": str(image),
                    "set_id": image,
                    "hyp": f"A {word} seen by system {rank}.",
                    "image": name,
                    "P": p,
                    "R": r,
                    "Fl": -0.0,
                    "Inc": -0.0,
                    "Con": -0.0,
                    "human_score": (p + r) / 2,
                }
            )
    files = {
        "mscoco_THumB-1.0.jsonl": "".join(json.dumps(row) + "\n" for row in rows),
        "mscoco_references.json": "".join(json.dumps(row) + "\n" for row in refs),
    }
    entry = {
        "name": "thumb",
        "title": "THumB 1.0 (MSCOCO)",
        "kind": "meta-evaluation",
        "licence": "test copy",
        "homepage": "https://github.com/jungokasai/THumB",
        "citation": "Kasai et al. 2022",
        "files": [],
        "import": {"format": "thumb", "path": "mscoco_THumB-1.0.jsonl", "slug": "thumb"},
    }
    for name, text in files.items():
        (folder / name).write_text(text)
        entry["files"].append(
            {
                "name": name,
                "url": (folder / name).as_uri(),
                "size": len(text.encode()),
                "sha256": hashlib.sha256(text.encode()).hexdigest(),
                "provenance": "made by the test",
            }
        )
    (folder / "catalogue.json").write_text(json.dumps([entry]))
    return folder / "catalogue.json"


def _start(repo_root: Path, state: Path, port: int, log: Path, *extra: str, warm: bool = True) -> subprocess.Popen:
    """`make run`'s runner; `warm=False`: its worker's children start no METEOR JVM on the whole
    paraphrase table before their first batch (20 s of CPU beside the rest of the suite while the
    demo is scored; its batches start theirs on their own cut of the table)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    if not warm:
        env["CAPBENCH_WORKER_WARMUP"] = "0"
    return subprocess.Popen(
        [sys.executable, "-m", "capbench.run", "--port", str(port), "--state-dir", str(state), *extra],
        env=env,
        cwd=repo_root,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _manage(repo_root: Path, state: Path, *command: str, **extra: str) -> subprocess.CompletedProcess:
    """`python manage.py …` as a newcomer types it: no DATABASE_URL or REDIS_URL (unless given), the
    same state directory."""
    env = {key: value for key, value in os.environ.items() if key not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(CAPBENCH_STATE_DIR=str(state), **extra)
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "manage.py", *command], env=env, cwd=repo_root, capture_output=True, text=True, timeout=120
    )


def _stop(process: subprocess.Popen) -> int:
    os.killpg(process.pid, signal.SIGINT)
    return process.wait(timeout=60)


def _descendants_alive(state: Path) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(state) in line]


def test_make_run_serves_the_demo_and_stops_cleanly(repo_root, tmp_path, browser_page, artefacts):
    state = tmp_path / "state"
    port = _free_port()
    log = tmp_path / "run.log"
    catalogue = _thumb_catalogue(tmp_path / "thumb")
    # Warmed up in the second run, which the web server's end stops while the warm-up may still run.
    process = _start(repo_root, state, port, log, "--demo-catalogue", str(catalogue), warm=False)
    try:
        _wait_for_line(log, "CapBench is serving", process)
        # The registry's metrics are stored first, behind the serving site: once that step has
        # said so, the API lists every registered metric.
        _wait_for_line(log, "demo: metrics: ", process)
        registered = int(re.search(r"demo: metrics: (\d+) registered", log.read_text()).group(1))
        metrics = json.loads(_wait_for(f"http://127.0.0.1:{port}/api/v1/metrics/", process))
        assert registered >= 20
        assert metrics["count"] == registered
        page = _wait_for(f"http://127.0.0.1:{port}/datasets/flickr8k-expert-demo/", process)
        # The demo loads behind the serving site: THumB's five systems on their board, the people
        # column from their ratings.
        _wait_for_line(log, "demo: THumB 1.0 (5 systems on MSCOCO) is on its board", process)
        board = _wait_for(f"http://127.0.0.1:{port}/datasets/thumb/leaderboard/", process)
        for system in ("Up-Down", "Unified-VLP", "VinVL-base", "VinVL-large", "Human"):
            assert f">{system}<" in board, system
        assert "People:" in board
        assert "ratings" in board
        # The production path: gunicorn, and static files under their content hash, cached for good.
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert "gunicorn" in response.headers.get("Server", ""), dict(response.headers)
            home = response.read().decode()
        hashed = re.search(r"/static/capbench\.[0-9a-f]{12}\.css", home)
        assert hashed, home[:2000]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{hashed.group(0)}", timeout=10) as response:
            assert "immutable" in response.headers.get("Cache-Control", "")
            assert response.read()
        # Without DEBUG, runserver still serves static files (WhiteNoise, from the finders), and an
        # error page shows nothing of the settings or the environment.
        for path in (
            "/static/plotly/plotly.min.js",
            "/static/js/upload.js",
            "/static/capbench.css",
            "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js",
        ):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
                assert response.status == 200 and response.read(), path
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/no-such-page/", timeout=10)
        assert missing.value.code == 404
        assert b"DEBUG" not in missing.value.read()
        _pages_load_in_a_browser(browser_page, f"http://127.0.0.1:{port}", artefacts)
        # A command typed in another terminal acts on the platform's own embedded database.
        listed = _manage(repo_root, state, "datasets", "list")
        assert listed.returncode == 0 and "flickr8k-expert-demo" in listed.stdout, listed.stderr[-2000:]
    finally:
        code = _stop(process)
    assert not (state / "services.json").exists()  # stopped: commands no longer look for it
    # A database that does not answer: one line with the fix, no traceback (a closed port stands in
    # for a machine whose 127.0.0.1:5432 runs nothing).
    stopped = _manage(repo_root, state, "datasets", "list", DATABASE_URL="postgresql://postgres@127.0.0.1:9/capbench")
    assert stopped.returncode == 1
    assert stopped.stderr.startswith("cannot reach the database (")
    assert "make run" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert stopped.stderr.count("\n") <= 1
    output = log.read_text()
    assert "Flickr8k-Expert" in page and "100 items" in page, output[-3000:]
    assert "flickr8k-expert-demo: imported" in output
    assert "admin login: admin / " in output
    assert (state / "admin-password.txt").exists()
    assert "worker answered a ping task" in output
    assert "Failed to stop" not in output and "Traceback" not in output, output[-3000:]
    assert code == 0, output[-3000:]
    assert not _descendants_alive(state), "a server started by make run is still running"

    # The second run finds the data: nothing is imported again. When a part gives up on its own (the
    # web server killed here), the run says which and stops everything else.
    process = _start(repo_root, state, port, log, "--demo-catalogue", str(catalogue))
    try:
        _wait_for(f"http://127.0.0.1:{port}/", process)
        _wait_for_line(log, "thumb: unchanged", process)
        os.kill(_child_pid(process.pid, "-m gunicorn"), signal.SIGKILL)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            _stop(process)
    output = log.read_text()
    assert "flickr8k-expert-demo: unchanged" in output
    assert re.search(r"is serving on \S+ after \d+ s", output)
    assert code == 1 and "the web server exited on its own (code -9)" in output, output[-3000:]
    # Nothing of either part is left, at once: not the worker's pool or embedded beat (named by the
    # state dir), nor gunicorn's workers orphaned by the kill (named by the port). Each part runs in
    # its own process group, which the runner kills whole once the part has stopped.
    assert not _descendants_alive(state), "a server started by make run is still running"
    assert not _bound_to(port), "a gunicorn worker of make run is still running"


def _bound_to(port: int) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if f"--bind 127.0.0.1:{port}" in line]


def _pages_load_in_a_browser(page, base: str, artefacts: Path) -> None:
    """What a newcomer sees on `make run`'s server (gunicorn, hashed static files): the stylesheet
    applied, the demo's charts drawn by Plotly once the worker has scored it, Swagger UI listing the
    API. The browser fixture fails the test on any CSP violation or script error."""
    page.goto(f"{base}/")
    applied = page.evaluate(
        "() => [...document.styleSheets].some(s => s.href && s.href.includes('/static/capbench.') && s.cssRules.length)"
    )
    assert applied, "the stylesheet did not load"
    deadline = time.monotonic() + 180  # the demo is scored by make run's worker meanwhile
    while True:
        page.goto(f"{base}/metrics/bleu_1/")
        try:
            page.wait_for_selector("#chart-scatter .main-svg", timeout=5_000)
            break
        except PlaywrightTimeout:
            assert time.monotonic() < deadline, "the demo's charts never appeared on the metric page"
    page.screenshot(path=str(artefacts / "make-run-metric.png"), full_page=True)
    page.goto(f"{base}/api/v1/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert page.locator(".swagger-ui .opblock").count() > 5


def _child_pid(parent: int, name: str) -> int:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,args="], capture_output=True, text=True).stdout
    for line in out.splitlines():
        pid, ppid, args = line.split(None, 2)
        if int(ppid) == parent and name in args:
            return int(pid)
    raise AssertionError(f"no {name} under {parent}:\n{out}")


def test_make_run_refuses_a_taken_port_before_starting_anything(repo_root, tmp_path):
    state = tmp_path / "state"
    log = tmp_path / "run.log"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = _start(repo_root, state, taken.getsockname()[1], log)
        code = process.wait(timeout=60)
        output = log.read_text()
        assert code == 1, output[-3000:]
        assert f"127.0.0.1:{taken.getsockname()[1]} is taken" in output and "PORT=" in output, output
    assert "Traceback" not in output
    assert "is serving" not in output
    assert not state.exists(), "something was started before the port was checked"
