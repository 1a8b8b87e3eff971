"""The served platform under load: 20 concurrent keep-alive clients for 30 s on the captioner board
(HTML and JSON), the metric board (/metrics/) and an item page, at 10 datasets × 200 systems × 40
metrics, against gunicorn with our settings (capbench/gunicorn.py, what `make run` serves) and, in
the same run, Django's runserver. Prints req/s, median, p95, p99 and errors per URL and server, and
the median time of a conditional request answered 304.

    DATABASE_URL=... REDIS_URL=... python -m bench.serve [--seconds 30] [--clients 20]
    (or: python -m capbench.embedded -- python -m bench.serve)

Point it at a scratch database: it adds (and at the end removes) datasets named bench-serve-* and
metrics named bench_*. The API row is the REST board (built per request: only anonymous pages and
downloads are kept whole).

Targets (this 2-core machine): board HTML and JSON ≥ 400 req/s with p99 < 100 ms; /metrics/ ≥ 200
req/s; zero errors; 304s in < 5 ms median (measured with one client: under 20 in a closed loop the
median is about 20 / throughput for any path). The load generator runs on the same cores as the server.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
os.environ.setdefault("DJANGO_DEBUG", "0")
# The limiter would answer most of these requests 429 (one address, thousands a minute): measured is
# serving, with the limits off in both servers.
os.environ["CAPBENCH_RATE_LIMITS_ENABLED"] = "0"
django.setup()

import numpy as np  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402

from capbench_eval.metaeval.protocols import protocol  # noqa: E402
from catalog.models import Dataset, Item, System  # noqa: E402
from leaderboards.snapshots import board_refresh  # noqa: E402
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, SystemScore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PAPER = protocol("thumb")
PREFIX = "bench-serve"
DATASETS, SYSTEMS, METRICS = 10, 200, 40


def build() -> tuple[str, int]:
    """The platform's data at the benchmark's size (replaced if there); the first dataset's slug and
    one of its item ids."""
    rng = np.random.default_rng(0)
    with transaction.atomic():
        Dataset.objects.filter(slug__startswith=PREFIX).delete()
        Metric.objects.filter(slug__startswith="bench_").delete()
        metrics = Metric.objects.bulk_create(
            [
                Metric(
                    slug=f"bench_{index:02d}", name=f"Bench metric {index}", family=["ngram", "embedding"][index % 2]
                )
                for index in range(METRICS)
            ]
        )
        versions = MetricVersion.objects.bulk_create(
            [
                MetricVersion(metric=metric, version="1", config_hash=f"{index:016x}")
                for index, metric in enumerate(metrics)
            ]
        )
        for metric, version in zip(metrics, versions, strict=True):
            metric.current_version = version
        Metric.objects.bulk_update(metrics, ["current_version"])
        datasets = Dataset.objects.bulk_create(
            [
                # THumB's protocols: the metric board shows the cells of a dataset's current protocols only.
                Dataset(slug=f"{PREFIX}-{d}", title=f"Serving benchmark {d}", source_format="thumb", is_public=True)
                for d in range(DATASETS)
            ]
        )
        items = Item.objects.bulk_create(
            [
                Item(dataset=dataset, external_id=f"item{i}", references=["a reference"])
                for dataset in datasets
                for i in range(20)
            ]
        )
        systems = System.objects.bulk_create(
            [
                System(dataset=dataset, slug=f"system-{s}", name=f"System {s}")
                for dataset in datasets
                for s in range(SYSTEMS)
            ]
        )
        EvaluationJob.objects.bulk_create(
            [
                EvaluationJob(purpose="dataset", dataset=dataset, metric_version=version, status="done")
                for dataset in datasets
                for version in versions
            ]
        )
        values = rng.random((len(systems), len(versions)))
        SystemScore.objects.bulk_create(
            [
                SystemScore(
                    system=system,
                    metric_version=version,
                    value=float(values[s, v]),
                    low=float(values[s, v]) - 0.01,
                    high=float(values[s, v]) + 0.01,
                )
                for s, system in enumerate(systems)
                for v, version in enumerate(versions)
            ],
            batch_size=5000,
        )
        CorrelationResult.objects.bulk_create(
            [
                CorrelationResult(
                    metric_version=version,
                    dataset=dataset,
                    dimension="overall",
                    statistic="tau_b",
                    protocol=PAPER.key,
                    protocol_name="paper",
                    protocol_version=PAPER.version,
                    value=float(rng.random()),
                    n=100,
                )
                for dataset in datasets
                for version in versions
            ]
        )
    for dataset in datasets:
        board_refresh(dataset_id=dataset.pk)
    return datasets[0].slug, items[0].pk


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve(kind: str, port: int) -> subprocess.Popen:
    if kind == "gunicorn":
        command = ["-m", "gunicorn", "-c", "python:capbench.gunicorn", "capbench.wsgi", "--bind", f"127.0.0.1:{port}"]
    else:
        command = [str(ROOT / "manage.py"), "runserver", f"127.0.0.1:{port}", "--noreload"]
    server = subprocess.Popen(
        [sys.executable, *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{kind} did not start")


def client_process(port: int, path: str, threads: int, seconds: float, headers: dict, out) -> None:
    """`threads` keep-alive connections requesting `path` until the time is up; latencies (s) and errors
    (any status but 200, or but 304 for a conditional request)."""
    expected = 304 if "If-None-Match" in headers else 200
    latencies: list[float] = []
    errors = [0]
    stop = time.monotonic() + seconds

    def run() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        while time.monotonic() < stop:
            started = time.perf_counter()
            try:
                connection.request("GET", path, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status != expected:
                    errors[0] += 1
                else:
                    latencies.append(time.perf_counter() - started)
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            except (OSError, http.client.HTTPException):
                errors[0] += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((latencies, errors[0]))


def load(port: int, path: str, clients: int, seconds: float, headers: dict | None = None) -> dict:
    """`clients` connections spread over up to 4 processes (one Python process cannot drive 20 alone)."""
    processes = min(4, clients)
    queue: multiprocessing.Queue = multiprocessing.Queue()
    shares = [clients // processes + (1 if i < clients % processes else 0) for i in range(processes)]
    children = [
        multiprocessing.Process(target=client_process, args=(port, path, share, seconds, headers or {}, queue))
        for share in shares
    ]
    for child in children:
        child.start()
    results = [queue.get() for _ in children]
    for child in children:
        child.join()
    latencies = sorted(value for found, _ in results for value in found)
    errors = sum(error for _, error in results)
    if not latencies:
        return {"rps": 0.0, "median": float("nan"), "p95": float("nan"), "p99": float("nan"), "errors": errors}
    pick = lambda share: latencies[min(len(latencies) - 1, int(share * len(latencies)))]  # noqa: E731
    return {
        "rps": len(latencies) / seconds,
        "median": statistics.median(latencies) * 1000,
        "p95": pick(0.95) * 1000,
        "p99": pick(0.99) * 1000,
        "errors": errors,
    }


def etag_of(port: int, path: str) -> str:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path)
    response = connection.getresponse()
    response.read()
    return response.getheader("ETag") or ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--servers", nargs="+", default=["gunicorn", "runserver"])
    args = parser.parse_args()
    call_command("migrate", "--noinput", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)
    started = time.perf_counter()
    slug, item = build()
    print(f"data: {DATASETS} datasets × {SYSTEMS} systems × {METRICS} metrics in {time.perf_counter() - started:.1f} s")
    paths = {
        "board HTML": f"/datasets/{slug}/leaderboard/",
        "board JSON": f"/datasets/{slug}/leaderboard/?download=json",
        "board API": f"/api/v1/leaderboards/{slug}/",
        "/metrics/": "/metrics/",
        "item page": f"/datasets/{slug}/items/{item}/",
    }
    print(f"{args.clients} keep-alive clients, {args.seconds:.0f} s per URL; ms")
    print(f"{'server':10} {'URL':14} {'req/s':>8} {'median':>8} {'p95':>8} {'p99':>8} {'errors':>7}")
    for kind in args.servers:
        port = free_port()
        server = serve(kind, port)
        try:
            for name, path in paths.items():
                load(port, path, 2, 2)  # warm: workers loaded, the anonymous board cached
                found = load(port, path, args.clients, args.seconds)
                print(
                    f"{kind:10} {name:14} {found['rps']:8.1f} {found['median']:8.1f} {found['p95']:8.1f} "
                    f"{found['p99']:8.1f} {found['errors']:7d}",
                    flush=True,
                )
            etag = etag_of(port, paths["board HTML"])
            conditional = {"If-None-Match": etag}
            # Under the same load, then alone: how long a 304 takes when the server is not saturated
            # (with 20 clients in a closed loop the median is about 20 / throughput, whatever the path).
            for name, clients in (("board 304", args.clients), ("304, 1 client", 1)):
                found = load(port, paths["board HTML"], clients, min(args.seconds, 10), conditional)
                print(
                    f"{kind:10} {name:14} {found['rps']:8.1f} {found['median']:8.1f} {found['p95']:8.1f} "
                    f"{found['p99']:8.1f} {found['errors']:7d}",
                    flush=True,
                )
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=30)
    with transaction.atomic():
        Dataset.objects.filter(slug__startswith=PREFIX).delete()
        Metric.objects.filter(slug__startswith="bench_").delete()
    return 0


if __name__ == "__main__":
    sys.exit(main())
