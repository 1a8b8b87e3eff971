"""Backup and restore, measured (docs/deploy.md, "Backups"): `manage.py backup` and `manage.py
restore` as an operator runs them (each its own process, Django's start included), on

1. the demo: `make run`'s Flickr8k-Expert slice, scored with three reference metrics, with a
   public submission and its uploaded file, and a picture stored for each image;
2. the same plus a 5,000-image benchmark with 8 submitted systems × 25 metric versions: one
   million Score rows with the detail and statistics each family stores (bench/scale.py's builder,
   COPY into the scratch database).

For each: the archive's size, the backup's and the restore's seconds (the restore into an empty
database it migrates itself, and an empty media folder), and a check that every table has the same
rows (count and digest) in the source and the restored database.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/5 \\
        python -m bench.backup [--database capbench_backup_bench] [--scores 1M]

The two scratch databases (--database and --database_restored, on DATABASE_URL's server) are dropped
and made again; a temporary folder holds the stores and archives. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.scale import PER_SYSTEM, ROOT, ScaleBench, database_url, prepare_database, size_value

TINY_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010800000000"
    "3a7e9b550000000a49444154789c636800000082008177cd72b60000000049454e44ae426082"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default="capbench_backup_bench")
    parser.add_argument("--scores", default="1M", help="the benchmark's Score rows (a multiple of 125,000)")
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    source, restored = args.database, f"{args.database}_restored"
    prepare_database(base, source, keep=False)
    folder = Path(tempfile.mkdtemp(prefix="capbench-backup-bench-"))
    env = {
        **os.environ,
        "DATABASE_URL": database_url(base, source),
        "DJANGO_SETTINGS_MODULE": "capbench.settings.local",
        "CAPBENCH_STATE_DIR": str(folder / "state"),
        "CAPBENCH_MEDIA_ROOT": str(folder / "media"),
        "CAPBENCH_QUEUE_PREFIX": f"backupbench{os.getpid()}-",
        "CAPBENCH_RATE_LIMITS_ENABLED": "false",
    }
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from scoring.services.metrics import metrics_sync

    metrics_sync()
    demo(folder)
    results = [measure("demo", base, source, restored, env, folder)]
    bench = ScaleBench(argparse.Namespace(meta_images=0, repeat=1))
    bench.board_dataset()
    started = time.perf_counter()
    bench.grow(size_value(args.scores) // PER_SYSTEM)
    print(f"built {size_value(args.scores):,} benchmark scores in {time.perf_counter() - started:.0f} s", flush=True)
    results.append(measure(f"demo + {args.scores} scores", base, source, restored, env, folder))
    print()
    print(f"{'data':<22} {'rows':>11} {'files':>6} {'archive':>10} {'database':>10} {'backup':>8} {'restore':>8}  same")
    for found in results:
        print(
            f"{found['data']:<22} {found['rows']:>11,} {found['files']:>6} {found['archive_mb']:>8.1f}MB "
            f"{found['database_mb']:>8.0f}MB {found['backup_s']:>7.1f}s {found['restore_s']:>7.1f}s  {found['same']}"
        )
    return 0


def demo(folder: Path) -> None:
    """`make run`'s demo dataset, scored with three reference metrics in this process, a picture
    stored for each image, and a public submission (its uploaded file goes to the store)."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from capbench.run import DEMO_DATASET, DEMO_SLUG, DEMO_TITLE
    from catalog.models import Dataset, Item, Media
    from plumbing import storage
    from scoring.models import JobBatch
    from scoring.services.batches import batch_run
    from scoring.services.finalize import job_finalize
    from scoring.services.planning import dataset_plan
    from submissions.services import MethodInfo, submission_create, submission_plan

    def run(jobs) -> None:
        for job in jobs:
            for batch_id in JobBatch.objects.filter(job=job).order_by("index").values_list("pk", flat=True):
                if batch_run(batch_id=batch_id, worker="bench-backup@local").job_complete:
                    job_finalize(job_id=job.pk)

    from django.core.management import call_command

    call_command("datasets", "import", "flickr8k-expert", str(DEMO_DATASET), "--slug", DEMO_SLUG, "--title", DEMO_TITLE)
    dataset = Dataset.objects.get(slug=DEMO_SLUG)
    metrics = ["bleu_4", "cider_d", "rouge_l"]
    run(dataset_plan(dataset=dataset, slugs=metrics))
    for media in Media.objects.filter(dataset=dataset):  # a distinct small picture for each image
        picture = folder / "picture.png"
        picture.write_bytes(TINY_PNG + media.name.encode())
        digest = hashlib.sha256(picture.read_bytes()).hexdigest()
        stored = storage.put_path(f"{digest[:2]}/{digest}.png", picture)
        Media.objects.filter(pk=media.pk).update(
            sha256=digest, size_bytes=picture.stat().st_size, stored_path=stored, attached_at=timezone.now()
        )
    owner = get_user_model().objects.create_user("bench-backup")
    entries = [
        {"image_id": item.external_id, "caption": item.references[0]} for item in Item.objects.filter(dataset=dataset)
    ]
    submission = submission_create(
        owner=owner,
        dataset=dataset,
        file_name="results.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Bench backup"),
        metrics=metrics,
        is_public=True,
    )
    run(submission_plan(submission_id=submission.pk))


def measure(data: str, base: str, source: str, restored: str, env: dict, folder: Path) -> dict:
    archive = folder / f"backup-{int(time.time() * 1000)}.tar"
    started = time.perf_counter()
    manage(env, "backup", "--output", str(archive))
    backup_s = time.perf_counter() - started
    prepare_database(base, restored, keep=False)
    media = folder / f"restored-media-{archive.stem}"
    restore_env = {**env, "DATABASE_URL": database_url(base, restored), "CAPBENCH_MEDIA_ROOT": str(media)}
    started = time.perf_counter()
    manage(restore_env, "restore", str(archive))
    restore_s = time.perf_counter() - started
    left, right = table_digests(database_url(base, source)), table_digests(database_url(base, restored))
    files = sum(1 for path in media.rglob("*") if path.is_file())
    found = {
        "data": data,
        "rows": sum(rows for rows, _ in left.values()),
        "files": files,
        "archive_mb": archive.stat().st_size / 1e6,
        "database_mb": database_bytes(database_url(base, source)) / 1e6,
        "backup_s": backup_s,
        "restore_s": restore_s,
        "same": left == right,
    }
    print(json.dumps(found), flush=True)
    archive.unlink()
    return found


def manage(env: dict, *command: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *command], env=env, check=True)


def table_digests(url: str) -> dict[str, tuple[int, str]]:
    """Per table (rows, md5 of its rows as text): plumbing/backups/schema.py's, as the tests check a restore."""
    import psycopg

    from plumbing.backups import table_digests as digests

    with psycopg.connect(url) as connection:
        return digests(connection)


def database_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as connection:
        return connection.execute("SELECT pg_database_size(current_database())").fetchone()[0]


if __name__ == "__main__":
    sys.exit(main())
