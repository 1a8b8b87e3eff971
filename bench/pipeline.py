"""A 5,000-caption submission scored with BLEU-1..4, ROUGE-L, CIDEr-D and METEOR end to end through
the queue: upload (validation + one transaction) → planning → batches on a real Celery worker →
stored scores and system numbers. Target: under 60 s on this machine. Printed beside it: the time
pycocoevalcap takes for the same four metrics on the same captions in this run, and the ratio.
The clock starts once the worker takes tasks and each of its processes has warmed up (its JVMs
started: scoring/warmup.py), as a worker that has been running for a while would be.

Items are 5,000 Flickr8k images (captions 2-5 as references, caption 1 as the submission). Run from
the repository root (`-m` puts it first on the import path, so the test data's loader,
tests/judgment_data.py, imports as `tests.judgment_data`):

    DATABASE_URL=... REDIS_URL=... python -m bench.pipeline [--concurrency 2] [--timeline]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
os.environ.setdefault("CAPBENCH_QUEUE_PREFIX", f"bench{os.getpid()}-")
django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from catalog.models import Dataset, Item  # noqa: E402
from plumbing import heartbeat  # noqa: E402
from scoring.models import EvaluationJob, JobBatch  # noqa: E402
from submissions.models import Submission  # noqa: E402
from submissions.services import MethodInfo, submission_create  # noqa: E402
from tests.judgment_data import judgment_data  # noqa: E402  (the Flickr8k files, decompressed once)

ROOT = Path(__file__).resolve().parents[1]
TOKENS = judgment_data() / "flickr8k" / "Flickr8k.token.txt"
SIZE, TARGET = 5000, 60.0
METRICS = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d", "meteor"]
SLUG = "bench-pipeline-5k"
HOSTNAME = f"bench{os.getpid()}@{socket.gethostname()}"


def flickr_captions() -> dict[str, list[str]]:
    captions: dict[str, list[str]] = defaultdict(list)
    for line in TOKENS.read_text(encoding="utf-8").splitlines():
        key, _, text = line.partition("\t")
        captions[key.split("#")[0]].append(text.strip())
    return {image: texts for image, texts in captions.items() if len(texts) == 5}


def bench_dataset(captions: dict[str, list[str]]) -> Dataset:
    with transaction.atomic():
        Dataset.objects.filter(slug=SLUG).delete()
        dataset = Dataset.objects.create(
            slug=SLUG,
            title="Pipeline benchmark (5,000 Flickr8k images)",
            source_format="bench",
            dimensions=["overall"],
            is_public=False,
        )
        Item.objects.bulk_create(
            [
                Item(dataset=dataset, external_id=image, references=texts[1:])
                for image, texts in list(captions.items())[:SIZE]
            ]
        )
    return dataset


def start_worker(concurrency: int) -> subprocess.Popen:
    prefix = settings.CAPBENCH_QUEUE_PREFIX
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "capbench",
            "worker",
            "--queues",
            ",".join(prefix + kind for kind in ("cpu", "gpu", "api")),
            "--concurrency",
            str(concurrency),
            "--hostname",
            HOSTNAME,
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
        ],
        cwd=ROOT,
        start_new_session=True,
    )


def wait_until_warm(worker: subprocess.Popen, concurrency: int, limit: float = 300.0) -> float:
    """Until the worker beats (it takes tasks) and each of its processes has warmed up (its JVMs
    started: scoring.warmup): its start-up is not the pipeline's time. Returns the slowest warm-up."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise SystemExit("the worker died while starting")
        warm = heartbeat.warm_processes(HOSTNAME)
        if heartbeat.alive(HOSTNAME) and len(warm) >= concurrency:
            return max(warm.values())
        time.sleep(0.1)
    raise SystemExit(f"the worker was not ready and warm within {limit:.0f} s")


def timeline(system_id: int, started_at) -> None:
    """Each batch's start and end, in seconds from the upload, by worker process (--timeline)."""
    rows = JobBatch.objects.filter(job__system_id=system_id).values_list(
        "job__metric_version__metric__slug", "index", "worker", "started_at", "finished_at", "seconds"
    )
    print("  batches (s from the upload: start → end, compute):")
    for slug, index, worker, begun, ended, seconds in sorted(rows, key=lambda row: row[3]):
        print(
            f"    {(begun - started_at).total_seconds():6.2f} → {(ended - started_at).total_seconds():6.2f}  "
            f"{seconds:5.2f}  {slug:8} #{index}  {worker.split('/')[0]}"
        )


def reference_seconds(entries: list[dict], references: dict[str, list[str]]) -> float:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    started = time.perf_counter()
    tokenizer = PTBTokenizer()
    gts = tokenizer.tokenize({e["image_id"]: [{"caption": r} for r in references[e["image_id"]]] for e in entries})
    res = tokenizer.tokenize({e["image_id"]: [{"caption": e["caption"]}] for e in entries})
    with contextlib.redirect_stdout(io.StringIO()):
        for scorer in (Bleu(4), Rouge(), Cider(), Meteor()):
            scorer.compute_score(gts, res)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeline", action="store_true", help="print every batch's start and end")
    args = parser.parse_args()
    captions = flickr_captions()
    dataset = bench_dataset(captions)
    owner, _ = get_user_model().objects.get_or_create(username="bench-pipeline")
    Submission.objects.filter(owner=owner).delete()
    entries = [{"image_id": image, "caption": texts[0]} for image, texts in list(captions.items())[:SIZE]]
    content = json.dumps(entries).encode()
    worker = start_worker(args.concurrency)
    try:
        waited = time.perf_counter()
        warm_up = wait_until_warm(worker, args.concurrency)
        waited = time.perf_counter() - waited
        started, started_at = time.perf_counter(), timezone.now()
        submission = submission_create(
            owner=owner,
            dataset=dataset,
            file_name="results.json",
            content=content,
            method=MethodInfo("Flickr8k caption 1"),
            metrics=METRICS,
        )
        uploaded = time.perf_counter()
        while EvaluationJob.objects.filter(system=submission.system).count() < len(METRICS):
            time.sleep(0.05)
        planned = time.perf_counter()
        while Submission.objects.get(pk=submission.pk).status not in ("done", "failed"):
            if worker.poll() is not None:
                raise SystemExit("the worker died")
            time.sleep(0.05)
        finished = time.perf_counter()
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=60)
    jobs = EvaluationJob.objects.filter(system=submission.system).select_related("metric_version__metric")
    total = finished - started
    print(f"pipeline: {SIZE:,} captions × {len(METRICS)} metrics, worker concurrency {args.concurrency}")
    print(f"  (not counted: the worker ready in {waited:.2f} s, its processes' warm-up at most {warm_up:.2f} s)")
    print(f"  upload (validate + store, one transaction) {uploaded - started:6.2f} s")
    print(f"  queue → planned jobs and batches          {planned - uploaded:6.2f} s")
    print(f"  batches → stored scores, system numbers   {finished - planned:6.2f} s")
    for job in jobs.order_by("metric_version__metric__slug"):
        wall = (job.finished_at - job.started_at).total_seconds() if job.started_at else 0.0
        print(
            f"    {job.metric_version.metric.slug:8} {job.status:5} {job.batch_count} batch(es)  "
            f"metric {job.compute_seconds:5.2f} s  wall {wall:5.2f} s"
        )
    print(
        f"  end to end                                {total:6.2f} s  (target < {TARGET:.0f} s: "
        f"{'met' if total < TARGET else 'MISSED'})"
    )
    if args.timeline:
        timeline(submission.system_id, started_at)
    references = {image: texts[1:] for image, texts in captions.items()}
    reference = reference_seconds(entries, references)
    print(
        f"pycocoevalcap, same captions, in-process, no storage: {reference:6.2f} s "
        f"(pipeline / reference = {total / reference:.2f})"
    )
    Dataset.objects.filter(slug=SLUG).delete()
    return 0 if total < TARGET and Submission.objects.filter(status="done").exists() else 1


if __name__ == "__main__":
    sys.exit(main())
