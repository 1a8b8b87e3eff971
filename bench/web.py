"""Leaderboard pages and their JSON under load: 10 datasets × 200 systems × 40 metrics seeded
(80,000 system numbers, their jobs, 3,200 correlation cells); boards are served from precomputed
snapshots (rebuilt when a job ends; the rebuild time is printed). Each page is requested 30 times
through Django's test client and the median must stay under 150 ms. Printed beside it: the number
of SQL queries per request (constant in the number of systems: no N+1).

    DATABASE_URL=... REDIS_URL=... python -m bench.web
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
django.setup()

from django.db import connection, transaction  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from catalog.models import Dataset, System  # noqa: E402
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, SystemScore  # noqa: E402

DATASETS, SYSTEMS, METRICS, REPEAT, TARGET_MS = 10, 200, 40, 30, 150.0
PREFIX = "bench-web"


def seed() -> list[Dataset]:
    with transaction.atomic():
        cleanup()
        metrics = Metric.objects.bulk_create(
            [
                Metric(
                    slug=f"{PREFIX}-m{n:02d}",
                    name=f"Metric {n:02d}",
                    family="bench",
                    description="seeded for bench/web.py",
                )
                for n in range(METRICS)
            ]
        )
        versions = MetricVersion.objects.bulk_create(
            [MetricVersion(metric=m, version="1", config_hash=f"{n:016x}") for n, m in enumerate(metrics)]
        )
        for metric, version in zip(metrics, versions, strict=True):
            metric.current_version = version
        Metric.objects.bulk_update(metrics, ["current_version"])
        datasets = Dataset.objects.bulk_create(
            [
                Dataset(
                    slug=f"{PREFIX}-{d}",
                    title=f"Bench dataset {d}",
                    source_format="flickr8k-expert",
                    dimensions=["overall"],
                )
                for d in range(DATASETS)
            ]
        )
        for dataset in datasets:
            systems = System.objects.bulk_create(
                [System(dataset=dataset, slug=f"s{s}", name=f"System {s:03d}", kind="model") for s in range(SYSTEMS)]
            )
            EvaluationJob.objects.bulk_create(
                [
                    EvaluationJob(
                        purpose="submission",
                        dataset=dataset,
                        system=system,
                        metric_version=version,
                        status="done",
                        total=100,
                        done=100,
                    )
                    for system in systems
                    for version in versions
                ]
            )
            SystemScore.objects.bulk_create(
                [
                    SystemScore(system=system, metric_version=version, value=((s * 7 + v * 13) % 101) / 100, count=100)
                    for s, system in enumerate(systems)
                    for v, version in enumerate(versions)
                ]
            )
            CorrelationResult.objects.bulk_create(
                [
                    CorrelationResult(
                        metric_version=version,
                        dataset=dataset,
                        dimension="overall",
                        statistic=statistic,
                        protocol=f"flickr8k-expert/{protocol}@1",
                        protocol_name=protocol,
                        protocol_version="1",
                        value=0.3,
                        low=0.2,
                        high=0.4,
                        n=1000,
                    )
                    for version in versions
                    for protocol in ("paper", "canonical")
                    for statistic in ("tau_b", "tau_c")
                ]
            )
    return datasets


def cleanup() -> None:
    Dataset.objects.filter(slug__startswith=PREFIX).delete()
    Metric.objects.filter(slug__startswith=PREFIX).delete()


def measure(client: Client, url: str) -> tuple[float, int, int]:
    client.get(url)  # warm caches and template loading
    times = []
    for _ in range(REPEAT):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return statistics.median(times), len(queries), len(response.content)


def main() -> int:
    started = time.perf_counter()
    datasets = seed()
    print(
        f"seeded {DATASETS} datasets × {SYSTEMS} systems × {METRICS} metrics in {time.perf_counter() - started:.1f} s"
    )
    client = Client(HTTP_HOST="127.0.0.1")
    slug = datasets[3].slug
    from leaderboards.snapshots import board_refresh

    started = time.perf_counter()
    board_refresh(dataset_id=datasets[3].pk)
    print(
        f"  board snapshot rebuild (what a finished job costs the worker): "
        f"{(time.perf_counter() - started) * 1000:.0f} ms"
    )
    pages = [
        f"/datasets/{slug}/leaderboard/",
        f"/datasets/{slug}/leaderboard/?sort={PREFIX}-m07",
        f"/datasets/{slug}/leaderboard/?download=json",
        f"/api/v1/leaderboards/{slug}/?sort={PREFIX}-m07",
        "/metrics/",
        "/metrics/?protocol=canonical",
        "/api/v1/leaderboards/metrics/",
    ]
    missed = 0
    for url in pages:
        median, queries, size = measure(client, url)
        verdict = "ok" if median < TARGET_MS else "SLOW"
        missed += median >= TARGET_MS
        print(f"  {median:7.1f} ms median  {queries:3d} queries  {size / 1024:7.0f} KiB  {verdict}  {url}")
    cleanup()
    print(f"target: median < {TARGET_MS:.0f} ms on every page: {'met' if not missed else 'MISSED'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
