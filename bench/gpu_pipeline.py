"""Two 5,000-caption submissions scored with CLIP-S, RefCLIP-S, PAC-S and RefPAC-S end to end through
a real Celery worker on the gpu queue: upload (validation + one transaction) → planning → batches →
stored scores and system numbers. The first submission meets a cold worker (models not loaded, no
image features); the second, new captions on the same dataset, a warm one. Target (H100, warm):
under 15 s.

The dataset is synthetic: 1,000 distinct 500×375 JPEGs, 5 items each, 5 references per item. The
models are full-size ViT-B/32 with random weights (bench/fullsize.py) in a scratch model store.

    python -m capbench.embedded -- python -m bench.gpu_pipeline     (or with DATABASE_URL / REDIS_URL set)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import django

WORK = Path(tempfile.gettempdir()) / "capbench-bench-gpu-pipeline"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
os.environ.setdefault("CAPBENCH_QUEUE_PREFIX", f"bench{os.getpid()}-")
os.environ["CAPBENCH_MODEL_DIR"] = str(WORK / "models")
os.environ["CAPBENCH_FEATURE_DIR"] = str(WORK / f"features-{time.time_ns()}")  # cold: no image features yet
django.setup()

import numpy as np  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import transaction  # noqa: E402

from bench import fullsize  # noqa: E402
from bench.embedding import make_images  # noqa: E402
from bench.pipeline import start_worker  # noqa: E402
from bench.text import sentence  # noqa: E402
from catalog.models import Dataset, Item, Media  # noqa: E402
from catalog.services.media import media_attach  # noqa: E402
from scoring.models import EvaluationJob  # noqa: E402
from submissions.models import Submission  # noqa: E402
from submissions.services import MethodInfo, submission_create  # noqa: E402

METRICS = ["clip_s", "ref_clip_s", "pac_s", "ref_pac_s"]
SLUG, TARGET = "bench-gpu-pipeline", 15.0


def bench_dataset(images: list[str], captions: int, references: int) -> Dataset:
    rng = np.random.default_rng(0)
    with transaction.atomic():
        Dataset.objects.filter(slug=SLUG).delete()
        dataset = Dataset.objects.create(
            slug=SLUG, title="GPU pipeline benchmark", source_format="bench", dimensions=["overall"], is_public=False
        )
        media = Media.objects.bulk_create([Media(dataset=dataset, name=Path(path).name) for path in images])
        Item.objects.bulk_create(
            [
                Item(
                    dataset=dataset,
                    external_id=f"item{index:05d}",
                    media=media[index % len(media)],
                    references=[sentence(rng) for _ in range(references)],
                )
                for index in range(captions)
            ]
        )
    outcome = media_attach(dataset=dataset, directory=Path(images[0]).parent)
    assert outcome.still_missing == 0, outcome
    return dataset


def submit(owner, dataset: Dataset, seed: int, worker) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    entries = [
        {"image_id": external_id, "caption": sentence(rng)}
        for external_id in dataset.items.values_list("external_id", flat=True)
    ]
    started = time.perf_counter()
    submission = submission_create(
        owner=owner,
        dataset=dataset,
        file_name="results.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo(f"random captions {seed}"),
        metrics=METRICS,
    )
    uploaded = time.perf_counter()
    while Submission.objects.get(pk=submission.pk).status not in ("done", "failed"):
        if worker.poll() is not None:
            raise SystemExit("the worker died")
        time.sleep(0.05)
    finished = time.perf_counter()
    status = Submission.objects.get(pk=submission.pk).status
    jobs = EvaluationJob.objects.filter(system=submission.system).select_related("metric_version__metric")
    print(f"  status {status}; upload {uploaded - started:5.2f} s; queue → stored scores {finished - uploaded:6.2f} s")
    for job in jobs.order_by("metric_version__metric__slug"):
        wall = (job.finished_at - job.started_at).total_seconds() if job.started_at and job.finished_at else 0.0
        print(
            f"    {job.metric_version.metric.slug:10} {job.status:6} {job.batch_count:3} batch(es)  "
            f"metric {job.compute_seconds:6.2f} s  wall {wall:6.2f} s"
        )
    total = finished - started
    print(f"  end to end {total:6.2f} s")
    return {"total": total, "done": float(status == "done")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--captions", type=int, default=5000)
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--references", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1, help="worker processes (each keeps its own models)")
    args = parser.parse_args()
    store = WORK / "models"
    fullsize.open_clip_weights(store, "ViT-B-32-quickgelu")
    fullsize.pac_checkpoint(store)
    images = make_images(WORK / "images", args.images)
    dataset = bench_dataset(images, args.captions, args.references)
    owner, _ = get_user_model().objects.get_or_create(username="bench-gpu-pipeline")
    Submission.objects.filter(owner=owner).delete()
    worker = start_worker(args.concurrency)
    try:
        time.sleep(8)  # let the worker connect: its start-up is not the pipeline's time
        print(
            f"{args.captions:,} captions × {len(METRICS)} metrics ({', '.join(METRICS)}), worker concurrency "
            f"{args.concurrency}"
        )
        print("a cold worker (models load on first use, image features computed):")
        cold = submit(owner, dataset, 1, worker)
        print("a warm worker, a new submission on the same dataset:")
        warm = submit(owner, dataset, 2, worker)
    finally:
        worker.terminate()  # a warm shutdown: the worker stops its own pool
        worker.wait(timeout=60)
    met = warm["total"] < TARGET
    print(
        f"warm end to end {warm['total']:.2f} s (target < {TARGET:.0f} s: {'met' if met else 'MISSED'}); "
        f"cold {cold['total']:.2f} s"
    )
    Submission.objects.filter(owner=owner).delete()
    Dataset.objects.filter(slug=SLUG).delete()
    return 0 if met and cold["done"] and warm["done"] else 1


if __name__ == "__main__":
    sys.exit(main())
