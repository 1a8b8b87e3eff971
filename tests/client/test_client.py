"""The client without a CapBench server: its configuration file, Retry-After, the retry policy against
a real HTTP server in a thread (scripted answers), error messages, and that it imports no Django."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import capbench_client
from capbench_client import (
    CapBenchError,
    Client,
    ConnectionFailed,
    InvalidRequest,
    RateLimited,
    ServerError,
    cli,
    config,
)
from capbench_client.http import retry_after_seconds
from capbench_client.progress import ProgressDisplay, progress_line
from capbench_client.tables import progress_text, results_text

# Configuration


def test_the_config_folder_is_capbench_config_dir_else_xdg_else_home(tmp_path):
    assert (
        config.config_dir({"CAPBENCH_CONFIG_DIR": str(tmp_path / "own"), "XDG_CONFIG_HOME": "/x"}) == tmp_path / "own"
    )
    assert config.config_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "capbench"
    assert config.config_dir({"CAPBENCH_CONFIG_DIR": "", "XDG_CONFIG_HOME": ""}) == Path.home() / ".config/capbench"
    assert config.config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "capbench" / "config.json"


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_token_file_is_0600_in_a_0700_folder_even_under_a_permissive_umask(tmp_path):
    path = tmp_path / "deep" / "capbench" / "config.json"
    old = os.umask(0)  # what would make an ordinary open() create 0666 files and 0777 folders
    try:
        assert config.save({"url": "http://a", "token": "secret"}, path) == path
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert config.load(path) == {"url": "http://a", "token": "secret"}
    assert [p.name for p in path.parent.iterdir()] == ["config.json"]  # no temporary file left


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_the_file_is_never_on_disk_with_wider_permissions_and_an_old_one_is_replaced_whole(tmp_path, monkeypatch):
    """Every file created in the folder is 0600 from its creation (seen at the moment os.replace
    renames it in); an existing 0644 file is replaced by a 0600 one and, until then, said to be too
    open; a folder the user named is left as it is (it may be shared: the file alone is private)."""
    path = tmp_path / "config.json"
    path.write_text('{"token": "old"}')
    path.chmod(0o644)
    tmp_path.chmod(0o755)
    seen: list[tuple[str, int]] = []
    real_replace = os.replace

    def watching(source, target):
        seen.append((Path(source).name, stat.S_IMODE(os.stat(source).st_mode)))
        real_replace(source, target)

    assert config.too_open(path)
    monkeypatch.setattr(os, "replace", watching)
    config.save({"url": "http://b", "token": "new"}, path)
    assert not config.too_open(path)
    assert len(seen) == 1 and seen[0][0] != "config.json" and seen[0][1] == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755
    assert config.load(path)["token"] == "new"
    assert config.remove(path)
    assert not path.exists()
    assert not config.remove(path)


def test_an_unreadable_config_is_no_config(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    assert config.load(tmp_path / "config.json") == {}
    assert config.load(tmp_path / "missing.json") == {}


# Retry-After


def test_retry_after_is_seconds_or_an_http_date():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds("30") == 30
    assert retry_after_seconds(" 0 ") == 0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=90), usegmt=True), now=now) == 90
    assert retry_after_seconds("Wed, 01 Jan 2025 11:00:00 GMT", now=now) == 0  # in the past
    assert retry_after_seconds("Wed, 01 Jan 2025 14:30:00 GMT", now=now) == 2.5 * 3600
    for unreadable in (None, "", "soon", "-5", "1.5e3"):
        assert retry_after_seconds(unreadable) is None, unreadable


# Retries, against a real server that answers from a script


class Scripted:
    """An HTTP server on 127.0.0.1 answering each request with the next (status, headers, body)."""

    def __init__(self, answers: list[tuple[int, dict[str, str], object]]) -> None:
        self.answers = answers
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(size) if size else b""
                scripted.requests.append((self.command, self.path, dict(self.headers), body))
                status, headers, payload = scripted.answers.pop(0)
                if status is None:  # the connection dropped after the request was read: no answer
                    self.close_connection = True
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for key, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted() -> Iterator:
    servers: list[Scripted] = []

    def start(*answers: tuple[int, dict[str, str], object]) -> Scripted:
        servers.append(Scripted(list(answers)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def client_for(server: Scripted, slept: list[float], **options) -> Client:
    return Client(server.url, "tok", sleep=slept.append, **options)


def test_a_429_is_retried_after_the_seconds_it_names_then_succeeds(scripted, tmp_path):
    server = scripted(
        (429, {"Retry-After": "7"}, {"detail": "slow down"}),
        (429, {"Retry-After": "3"}, {"detail": "slow down"}),
        (201, {}, {"id": 5, "status": "queued"}),
    )
    results = tmp_path / "r.json"
    results.write_text("[]")
    slept: list[float] = []
    answer = client_for(server, slept).submit("demo", results, method_name="M", metrics=["a", "b"], public=True)
    assert answer == {"id": 5, "status": "queued"}
    assert slept == [7, 3]  # the server's waits, nothing else
    assert len(server.requests) == 3
    method, path, headers, body = server.requests[-1]
    assert (method, path) == ("POST", "/api/v1/submissions/")
    assert headers["Authorization"] == "Token tok"
    assert headers["User-Agent"].startswith("capbench-client/")
    # The file went with every try (reopened), and the repeated and boolean fields as the API reads them.
    assert all(b'filename="r.json"' in request[3] for request in server.requests)
    assert body.count(b'name="metrics"') == 2
    assert b'name="is_public"\r\n\r\ntrue' in body


def test_an_http_date_retry_after_is_honoured(scripted):
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    server = scripted((429, {"Retry-After": later}, {}), (200, {}, {"results": [], "next": None}))
    slept: list[float] = []
    assert client_for(server, slept).datasets() == []
    assert len(slept) == 1 and 55 <= slept[0] <= 60


def test_a_get_is_retried_after_503_with_backoff(scripted):
    server = scripted(
        (503, {}, b"busy"), (502, {}, b"bad gateway"), (200, {}, {"submission": 3, "final": True, "metrics": []})
    )
    slept: list[float] = []
    assert client_for(server, slept, backoff=0.5).progress(3)["final"] is True
    assert slept == [0.5, 1.0]
    assert [request[1] for request in server.requests] == ["/api/v1/submissions/3/progress/"] * 3


def test_a_post_is_never_sent_again_after_a_5xx(scripted, tmp_path):
    server = scripted((503, {}, b"busy"), (201, {}, {"id": 1}))
    results = tmp_path / "r.json"
    results.write_text("[]")
    slept: list[float] = []
    with pytest.raises(ServerError) as raised:
        client_for(server, slept).submit("demo", results, method_name="M")
    assert raised.value.status == 503
    assert "503" in str(raised.value)
    assert len(server.requests) == 1
    assert slept == []


def test_a_post_is_never_sent_again_after_the_connection_drops_mid_request(scripted, tmp_path):
    """The server read the upload and the connection dropped before its answer: it may be stored,
    so the client says so instead of uploading it again; a GET in the same case is asked again."""
    server = scripted((None, {}, b""), (201, {}, {"id": 1}))
    results = tmp_path / "r.json"
    results.write_text("[]")
    slept: list[float] = []
    with pytest.raises(CapBenchError):
        client_for(server, slept).submit("demo", results, method_name="M")
    assert len(server.requests) == 1
    assert slept == []
    server = scripted((None, {}, b""), (200, {}, {"final": True}))
    assert client_for(server, slept, backoff=0.5).progress(3)["final"] is True
    assert len(server.requests) == 2


def test_a_retry_after_beyond_the_cap_raises_at_once(scripted, tmp_path):
    quota = {"detail": "You have used today's 5 submissions.", "retry_after": 5 * 3600}
    server = scripted((429, {"Retry-After": str(5 * 3600)}, quota))
    results = tmp_path / "r.json"
    results.write_text("[]")
    slept: list[float] = []
    with pytest.raises(RateLimited) as raised:
        client_for(server, slept, max_sleep=120).submit("demo", results, method_name="M")
    assert raised.value.retry_after == 5 * 3600
    assert slept == []
    assert str(raised.value) == "You have used today's 5 submissions. (429); try again in 5.0 h"


def test_retries_stop_after_the_attempts_and_the_sleep_is_capped(scripted):
    server = scripted(*[(429, {"Retry-After": "100"}, {"detail": "slow down"})] * 3)
    slept: list[float] = []
    with pytest.raises(RateLimited):
        client_for(server, slept, attempts=3, max_sleep=120).datasets()
    assert slept == [100, 100]
    assert len(server.requests) == 3
    server = scripted(*[(503, {}, b"")] * 4)
    slept = []
    with pytest.raises(ServerError):
        client_for(server, slept, attempts=4, backoff=50, max_sleep=120).datasets()
    assert slept == [50, 100, 120]  # doubled, never past the cap


def test_a_refused_connection_is_retried_then_reported_without_a_traceback(capsys):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]  # nothing listens once it is closed
    slept: list[float] = []
    with pytest.raises(ConnectionFailed) as raised:
        Client(f"http://127.0.0.1:{port}", sleep=slept.append, attempts=3).datasets()
    assert slept == [1.0, 2.0]
    assert "connection refused" in str(raised.value)
    # The CLI: one line on stderr, status 1, after its one retry (a real second's wait).
    assert cli.main(["--url", f"http://127.0.0.1:{port}", "--retries", "1", "datasets"]) == 1
    err = capsys.readouterr().err
    assert (
        err.splitlines()[-1]
        == f"capbench: could not reach http://127.0.0.1:{port}: connection refused or host not found"
    )
    assert "Traceback" not in err
    assert err.count("trying again in 1 s") == 1


def test_a_400_names_every_located_problem(scripted, tmp_path, capsys):
    problems = {"results": ["r.json: line 3: no such image_id 'x.jpg'", "r.json: line 4: caption is empty"]}
    server = scripted((400, {}, problems), (400, {}, problems))
    results = tmp_path / "r.json"
    results.write_text("[]")
    with pytest.raises(InvalidRequest) as raised:
        client_for(server, []).submit("demo", results, method_name="M")
    assert raised.value.problems == [
        "results: r.json: line 3: no such image_id 'x.jpg'",
        "results: r.json: line 4: caption is empty",
    ]
    assert str(raised.value).splitlines()[1:] == ["  " + p for p in raised.value.problems]
    capsys.readouterr()
    assert cli.main(["--url", server.url, "--token", "t", "submit", "demo", str(results)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "capbench: the server refused the request (POST /api/v1/submissions/):",
        "  results: r.json: line 3: no such image_id 'x.jpg'",
        "  results: r.json: line 4: caption is empty",
    ]


def test_next_pages_are_followed_on_the_given_server_only(scripted):
    """`next` naming another host (a proxy's view of itself) is asked of the server the client was given."""
    server = scripted(
        (200, {}, {"next": "http://elsewhere.example/api/v1/scores/?cursor=abc&dataset=demo", "results": [{"id": 1}]}),
        (200, {}, {"next": None, "results": [{"id": 2}]}),
    )
    assert [row["id"] for row in client_for(server, []).scores(dataset="demo", page_size=1)] == [1, 2]
    assert [request[1] for request in server.requests] == [
        "/api/v1/scores/?dataset=demo&page_size=1",
        "/api/v1/scores/?cursor=abc&dataset=demo",
    ]


def test_scores_as_csv_cannot_run_in_a_spreadsheet_and_a_failed_download_keeps_the_old_file(scripted, tmp_path):
    """Other users' captions starting like a formula get a leading quote (numbers stay numbers); a
    request that fails part way leaves the earlier file as it was and no `.part` behind."""
    from capbench_client import cli

    rows = [{"id": 1, "caption": '=HYPERLINK("http://x")', "value": -0.25}, {"id": 2, "caption": "+1", "value": 0.5}]
    server = scripted(
        (200, {}, {"next": None, "results": rows}),
        (200, {}, {"next": "/api/v1/scores/?cursor=abc", "results": rows}),
        (404, {}, {"detail": "Invalid cursor"}),
    )
    output = tmp_path / "scores.csv"
    arguments = ["--url", server.url, "--token", "tok", "--retries", "0", "scores", "--format", "csv", "--output"]
    assert cli.main([*arguments, str(output)]) == 0
    written = output.read_text()
    assert list(csv.reader(io.StringIO(written))) == [
        ["id", "caption", "value"],
        ["1", '\'=HYPERLINK("http://x")', "-0.25"],
        ["2", "'+1", "0.5"],
    ]
    assert cli.main([*arguments, str(output)]) == 1
    assert output.read_text() == written
    assert not (tmp_path / "scores.csv.part").exists()


# What is shown


def test_the_progress_line_counts_across_metrics_and_is_quiet_when_unchanged():
    state = {
        "status": "running",
        "final": False,
        "metrics": [
            {"metric": "a", "status": "done", "done": 100, "total": 100},
            {"metric": "b", "status": "running", "done": 50, "total": 100, "batches_ahead": 0},
        ],
    }
    line = progress_line(state, width=10)
    assert line == "[########--]  150/200 scored  1/2 metrics finished  (running)"

    class Log:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

        def isatty(self) -> bool:
            return False

    log = Log()
    display = ProgressDisplay(log)  # type: ignore[arg-type]
    display(state)
    display(state)
    display({**state, "status": "done", "final": True})
    assert log.text.count("\n") == 2
    assert "\r" not in log.text
    terminal = Log()
    display = ProgressDisplay(terminal, tty=True)  # type: ignore[arg-type]
    display(state)
    display({**state, "status": "done"})
    display.close()
    assert terminal.text.count("\r") == 2
    assert terminal.text.endswith("(done)   \n")  # padded over "(running)"


def test_the_progress_bar_counts_only_the_metrics_the_server_computes_and_ends_at_n_of_n():
    finished = {
        "status": "done",
        "final": True,
        "metrics": [
            {"metric": "rouge_l", "status": "done", "done": 100, "total": 100},
            {"metric": "bleu_4", "status": "done", "done": 100, "total": 100},
        ],
        "unavailable": [{"metric": "bertscore", "name": "BERTScore", "words": "not available on this server yet"}],
        "not_computed_here": "BERTScore (its model is not installed)",
    }
    line = progress_line(finished, width=10)
    assert line == "[##########]  200/200 scored  2/2 metrics finished  1 not computed on this server  (done)"
    # An older server lists them among the metrics, with nothing done of their total: still N/N.
    older = {
        **finished,
        "unavailable": None,
        "not_computed_here": None,
        "metrics": [*finished["metrics"], {"metric": "bertscore", "status": "unavailable", "done": 0, "total": 100}],
    }
    assert progress_line(older, width=10) == line
    text = progress_text(older)
    assert "bertscore" not in text.split("Not computed")[0]
    assert text.endswith("Not computed on this server: bertscore.")
    assert progress_text(finished).endswith("Not computed on this server: BERTScore (its model is not installed).")


def test_the_results_table_shows_points_intervals_and_ranks():
    card = {
        "submission": 4,
        "status": "done",
        "dataset": "demo",
        "system": "mine",
        "public_systems": 2,
        "results": [
            {"metric": "cider_d", "name": "CIDEr-D", "value": 0.8123, "low": 0.7504, "high": 0.881,
             "points": 81.23, "low_points": 75.04, "high_points": 88.1,
             "rank": 1, "ranked": 3, "tied": False, "extra": "ignored"},
            {"metric": "rouge_l", "name": "ROUGE-L", "value": 0.5, "low": None, "high": None,
             "points": 50.0, "low_points": None, "high_points": None, "rank": 2, "ranked": 3, "tied": True},
        ],
        "pending": [{"metric": "bleu_4", "name": "BLEU-4", "status": "running", "words": "being scored now",
                     "done": 40, "total": 100}],
        "missing": [{"metric": "spice", "name": "SPICE", "status": "unavailable", "words": "not available",
                     "done": 0, "total": 0}],
    }  # fmt: skip
    assert results_text(card).splitlines() == [
        "Submission 4 on demo (system mine): done",
        "",
        "metric   value  95% interval           rank",
        "-------  -----  ------------  -------------",
        "CIDEr-D   81.2     75.0–88.1         1 of 3",
        "ROUGE-L   50.0                2 of 3 (tied)",
        "",
        "still scoring:",
        "  BLEU-4: being scored now (40/100)",
        "",
        "no number:",
        "  SPICE: not available",
    ]


# Other people's text on a terminal

# Sets the terminal's title, clears the screen (ESC [2J, and CSI alone: U+009B), rubs out (DEL), rings.
HOSTILE = "Evil\x1b]0;pwned\x07 net\x9b2J\x1b[2J\x7f\rfake line\nsecond"
CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")  # all but \t, \n and \r\n


def test_control_characters_from_the_server_are_printed_as_escapes(scripted, tmp_path, capsys):
    """A system's, metric's and dataset's names, a refusal's located problems, a CSV or JSON Lines
    download on stdout: no control character reaches the terminal (each is written `\\u001b`), plain
    spaces stay; a download written to --output keeps the server's bytes."""
    board = {
        "dataset": "demo" + HOSTILE,
        "sorted_by": "m",
        "headline_metric": "m",
        "metrics": [{"slug": "m", "name": "Metric" + HOSTILE}],
        "systems": [{"rank": 1, "name": HOSTILE, "scores": {"m": {"points": 12.5}}}],
    }
    csv_text = "rank,system\r\n1," + HOSTILE.replace("\n", " ") + "\r\n"
    rows = [{"caption": "a dog\x9b2J\x1b]0;t\x07", "value": 0.5}]
    refusal = {"method_name": ["field 'method name': " + HOSTILE]}
    server = scripted(
        (200, {}, board),
        (200, {"Content-Type": "text/csv; charset=utf-8"}, csv_text.encode()),
        (200, {"Content-Type": "text/csv; charset=utf-8"}, csv_text.encode()),
        (200, {}, {"next": None, "results": rows}),
        (200, {}, {"next": None, "results": [{"slug": "x", "name": HOSTILE, "family": "f"}]}),
        (400, {}, refusal),
    )
    base = ["--url", server.url, "--token", "t", "--retries", "0"]
    results = tmp_path / "r.json"
    results.write_text("[]")
    capsys.readouterr()
    assert cli.main([*base, "board", "demo"]) == 0
    text = capsys.readouterr().out
    assert not CONTROLS.search(text)
    assert "\t" not in text
    assert "Evil\\u001b]0;pwned\\u0007 net\\u009b2J\\u001b[2J\\u007f\\u000dfake line\\u000asecond" in text
    assert text.splitlines()[0].startswith("demoEvil\\u001b]0;pwned")
    assert "Metric" in text.splitlines()[2]
    assert cli.main([*base, "board", "demo", "--csv"]) == 0
    out = capsys.readouterr().out
    assert not CONTROLS.search(out)
    assert "1,Evil\\u001b]0;pwned\\u0007 net" in out
    assert cli.main([*base, "board", "demo", "--csv", "--output", str(tmp_path / "b.csv")]) == 0
    assert (tmp_path / "b.csv").read_bytes() == csv_text.encode()  # a file keeps the server's bytes
    assert cli.main([*base, "scores", "--format", "jsonl"]) == 0
    out = capsys.readouterr().out
    assert not CONTROLS.search(out)
    assert [json.loads(line) for line in out.splitlines()] == rows  # the same data
    assert cli.main([*base, "metrics"]) == 0
    assert not CONTROLS.search(capsys.readouterr().out)
    assert cli.main([*base, "submit", "demo", str(results)]) == 1
    err = capsys.readouterr().err
    assert not CONTROLS.search(err)
    assert "method_name: field 'method name': Evil\\u001b]0;pwned" in err


# Installed alone


def test_client_builds_alone_with_requests_its_only_dependency_and_runs_without_the_platform(repo_root, tmp_path):
    """client/pyproject.toml makes a wheel of capbench_client alone (what `pip install ./client` installs);
    from it, with Django and every platform package made unimportable, the command line works."""
    shutil.copytree(repo_root / "client", tmp_path / "client", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check",
         "-q", "-w", str(tmp_path / "dist"), str(tmp_path / "client")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("capbench_client-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
        archive.extractall(tmp_path / "site")
    assert {name.split("/")[0] for name in names if not name.startswith("capbench_client-")} == {"capbench_client"}
    assert [line for line in metadata.splitlines() if line.startswith("Requires-Dist")] == [
        "Requires-Dist: requests>=2.31"
    ]
    assert "capbench = capbench_client.cli:main" in entry_points
    blocked = ["django", "rest_framework", "celery", "capbench", "capbench_eval", "catalog", "scoring", "submissions"]
    run = (
        f"import sys; sys.modules.update(dict.fromkeys({blocked!r})); "  # None: `import django` raises ImportError
        "import capbench_client, capbench_client.cli as cli; "
        f"assert capbench_client.__file__.startswith({str(tmp_path / 'site')!r}), capbench_client.__file__; "
        "sys.exit(cli.main(['--version']))"
    )
    # The unpacked wheel first on the child's path (PYTHONPATH comes before the editable install).
    environment = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    result = subprocess.run(
        [sys.executable, "-c", run], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0 and result.stdout.strip() == f"capbench-client {capbench_client.__version__}", (
        result.stdout + result.stderr
    )


def test_the_client_imports_no_django(repo_root):
    check = (
        "import capbench_client, capbench_client.cli, sys; "
        "assert not any(m == 'django' or m.startswith('django.') for m in sys.modules), 'django imported'; "
        "assert not any(m.split('.')[0] in {'rest_framework', 'celery', 'capbench_eval', 'capbench'} for m in sys.modules)"
    )
    environment = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run(
        [sys.executable, "-c", check], cwd=repo_root, env=environment, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_python_m_capbench_client_help(repo_root):
    result = subprocess.run(
        [sys.executable, "-m", "capbench_client", "--help"], cwd=repo_root, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    for command in ("login", "submit", "results", "board", "scores", "candidates", "metric-upload", "datasets"):
        assert command in result.stdout


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_saved_token_others_can_read_is_used_with_a_warning(scripted, tmp_path, monkeypatch, capsys):
    server = scripted((200, {}, {"count": 0, "next": None, "previous": None, "results": []}))
    monkeypatch.setenv("CAPBENCH_CONFIG_DIR", str(tmp_path))
    saved = tmp_path / "config.json"
    saved.write_text(json.dumps({"url": server.url, "token": "secret"}))
    saved.chmod(0o644)
    assert cli.main(["--url", server.url, "datasets"]) == 0
    assert "can be read by others" in capsys.readouterr().err
    assert server.requests[0][2]["Authorization"] == "Token secret"
