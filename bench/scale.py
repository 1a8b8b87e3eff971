"""A year of public use, measured: a database with millions of per-caption scores, built through
bulk paths (COPY, bulk inserts; no metric is run), and the cost of what users and workers do on it.

The captioner benchmark has 5,000 images; every submitted system captions all of them and is scored
by 25 metric versions, so each system brings 125,000 Score rows. A size names the benchmark's Score
rows (1M: 8 systems, 10M: 80 systems, 50M: 400 systems). Beside it, built once, a meta-evaluation
dataset of 130,000 judged captions (26,000 images × 5 systems) scored by the same 25 metric versions
(3.25M more Score rows). Score rows carry `detail` and `statistics` shaped as each family stores
them (n-gram statistics, CLIP terms, a judge's reply).

At each size, the medians of repeated runs: database bytes per score row; upload and planning of a
new 5,000-caption submission with its reuse lookups; writing one batch; the board snapshot's
rebuild; pages and API responses as served (through every middleware: first response after the
cache is cleared, then p50 and p99); correlations with 1,000 bootstrap replicates for one metric on
the 130k rows; significance clusters for 25 metrics; the reaper's sweep; a full `datasets export`.

    DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379/5 \\
        python -m bench.scale --sizes 1M,10M [--database capbench_scale] [--keep]

The database named by --database (on DATABASE_URL's server) is dropped and built again unless
--keep is given and it already holds the sizes asked for. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
IMAGES, METRIC_COUNT, META_IMAGES, META_SYSTEMS = 5_000, 25, 26_000, 5
PER_SYSTEM = IMAGES * METRIC_COUNT
BOARD, META = "scale-board", "scale-meta"
WORDS = [
    "a",
    "man",
    "woman",
    "dog",
    "cat",
    "child",
    "two",
    "people",
    "group",
    "of",
    "young",
    "old",
    "standing",
    "sitting",
    "running",
    "on",
    "in",
    "at",
    "with",
    "the",
    "red",
    "blue",
    "green",
    "white",
    "black",
    "small",
    "large",
    "street",
    "beach",
    "park",
    "field",
    "water",
    "grass",
    "snow",
    "building",
    "table",
    "holding",
    "playing",
    "walking",
    "looking",
    "near",
    "next",
    "to",
    "front",
    "while",
    "wearing",
    "shirt",
    "ball",
    "bike",
    "car",
    "tree",
    "sky",
]


def size_value(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def database_url(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path="/" + name))


def prepare_database(base: str, name: str, keep: bool) -> bool:
    """Creates (or, without --keep, re-creates) the database; True when it existed and is kept."""
    import psycopg

    with psycopg.connect(database_url(base, "postgres"), autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is not None
        if exists and keep:
            return True
        if exists:
            admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", "--size", default="1M,10M", help="benchmark Score rows at which to measure, e.g. 1M,10M"
    )
    parser.add_argument("--database", default="capbench_scale")
    parser.add_argument("--keep", action="store_true", help="reuse the database when it already holds the data")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timed step (the median is printed)")
    parser.add_argument("--requests", type=int, default=40, help="requests per page (p50 and p99 of these)")
    parser.add_argument("--meta-images", type=int, default=META_IMAGES, help="a smaller meta set for a quick try")
    parser.add_argument(
        "--meta-correlations", type=int, default=METRIC_COUNT, help="metrics whose correlations the build computes"
    )
    parser.add_argument("--explain", action="store_true", help="print the hot statements' plans at each size")
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    args = parser.parse_args()
    sizes = [size_value(text) for text in args.sizes.split(",")]
    base = os.environ.get("DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    kept = prepare_database(base, args.database, args.keep)
    os.environ["DATABASE_URL"] = database_url(base, args.database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")
    os.environ.setdefault("CAPBENCH_QUEUE_PREFIX", f"scale{os.getpid()}-")
    os.environ["CAPBENCH_RATE_LIMITS_ENABLED"] = "false"
    import django

    django.setup()
    bench = ScaleBench(args)
    if not kept:
        bench.install()
    results = []
    for size in sizes:
        bench.grow(size // PER_SYSTEM)
        results.append(bench.measure(size))
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


class ScaleBench:
    def __init__(self, args) -> None:
        import numpy as np

        self.args = args
        self.rng = np.random.default_rng(20261124)

    # ---------------------------------------------------------------- building

    def install(self) -> None:
        from django.core.management import call_command

        started = time.perf_counter()
        call_command("migrate", verbosity=0)
        from scoring.services.metrics import metrics_sync

        metrics_sync()
        self.board_dataset()
        self.meta_dataset()
        print(
            f"installed: schema, metrics, the 5,000-image board, the 130k meta set ({time.perf_counter() - started:.0f} s)"
        )

    def versions(self):
        from scoring.models import MetricVersion

        wanted = [
            "bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l", "cider_d", "spice",
            "bertscore", "gveval_accr", "clip_s", "ref_clip_s", "pac_s", "ref_pac_s", "polos",
            "clair", "fleur", "visce2", "gveval_ref_free", "gveval_ref_only", "gveval_combined",
            "t2i_cycle", "hice_s", "ref_hice_s", "camscore",
        ]  # fmt: skip
        found = {
            version.metric.slug: version
            for version in MetricVersion.objects.filter(metric__slug__in=wanted).select_related("metric")
        }
        return [found[slug] for slug in wanted if slug in found][:METRIC_COUNT]

    def text(self, length: int | None = None) -> str:
        count = length or int(self.rng.integers(8, 14))
        return " ".join(WORDS[i] for i in self.rng.integers(0, len(WORDS), count)) + "."

    def board_dataset(self) -> None:
        from catalog.models import Dataset, Item

        dataset = Dataset.objects.create(
            slug=BOARD, title="Scale benchmark: 5,000 images", source_format="bench", dimensions=["overall"]
        )
        Item.objects.bulk_create(
            [
                Item(dataset=dataset, external_id=f"img-{i:05d}", references=[self.text() for _ in range(5)])
                for i in range(IMAGES)
            ],
            batch_size=2000,
        )

    def meta_dataset(self) -> None:
        from catalog.models import Dataset, Item, System
        from scoring.models import EvaluationJob

        dataset = Dataset.objects.create(
            slug=META,
            title="Scale meta-evaluation: 130,000 judged captions",
            source_format="bench",
            dimensions=["overall"],
            rating_scale={"min": 1, "max": 5},
        )
        Item.objects.bulk_create(
            [
                Item(dataset=dataset, external_id=f"meta-{i:05d}", references=[self.text() for _ in range(5)])
                for i in range(self.args.meta_images)
            ],
            batch_size=5000,
        )
        systems = System.objects.bulk_create(
            [System(dataset=dataset, slug=f"model-{i}", name=f"Model {i}") for i in range(META_SYSTEMS)]
        )
        items = list(Item.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))
        caption_ids = self.copy_captions([(item, system.pk) for system in systems for item in items])
        quality = {system.pk: 0.4 + 0.1 * n for n, system in enumerate(systems)}
        owner = {caption: system for (_, system), caption in caption_ids.items()}
        ids = list(caption_ids.values())
        human = {
            caption: min(5.0, max(1.0, round(1 + 4 * quality[owner[caption]] + self.rng.normal(0, 1))))
            for caption in ids
        }
        self.copy_rows(
            "catalog_judgment",
            ["caption_id", "dimension", "annotator", "value", "source"],
            ((caption, "overall", "", human[caption], "") for caption in ids),
        )
        for version in self.versions():
            signal = {caption: (human[caption] - 1) / 4 for caption in ids}
            self.copy_scores(version, ids, signal)
            EvaluationJob.objects.create(
                purpose=EvaluationJob.Purpose.DATASET,
                dataset=dataset,
                system=None,
                metric_version=version,
                status=EvaluationJob.Status.DONE,
                total=len(ids),
                done=len(ids),
            )
        started = time.perf_counter()
        from scoring.services.correlations import dataset_correlations, dataset_significance

        for version in self.versions()[: self.args.meta_correlations]:
            dataset_correlations(dataset=dataset, metric_version=version)
        dataset_significance(dataset=dataset)
        print(f"  the meta set's correlations and significance: {time.perf_counter() - started:.0f} s", flush=True)

    def grow(self, systems: int) -> None:
        from catalog.models import Dataset, Item, System

        dataset = Dataset.objects.get(slug=BOARD)
        have = System.objects.filter(dataset=dataset, submission__isnull=False).count()
        if have >= systems:
            return
        started = time.perf_counter()
        items = list(Item.objects.filter(dataset=dataset).order_by("id").values_list("id", flat=True))
        versions = self.versions()
        for n in range(have, systems):
            self.add_system(dataset, items, versions, n)
            if (n + 1) % 10 == 0:
                print(f"  {n + 1} systems ({time.perf_counter() - started:.0f} s)", flush=True)
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        print(
            f"grown to {systems} systems ({systems * PER_SYSTEM:,} board scores) in {time.perf_counter() - started:.0f} s"
        )

    def add_system(self, dataset, items, versions, n: int) -> None:
        import numpy as np
        from django.contrib.auth import get_user_model
        from django.db import transaction

        from catalog.models import System
        from scoring.models import EvaluationJob, JobBatch, SystemScore
        from submissions.models import Submission

        with transaction.atomic():
            owner = get_user_model().objects.create(username=f"researcher-{n}", email=f"r{n}@example.org")
            system = System.objects.create(dataset=dataset, slug=f"system-{n}", name=f"System {n}")
            Submission.objects.create(
                owner=owner,
                dataset=dataset,
                system=system,
                method_name=f"System {n}",
                file_name="results.json",
                file_format="json",
                file_sha256=hashlib.sha256(f"{n}".encode()).hexdigest(),
                file_size=400_000,
                stored_file=f"uploads/{n}.json",
                caption_count=len(items),
                status=Submission.Status.DONE,
                is_public=True,
            )
            caption_ids = list(self.copy_captions([(item, system.pk) for item in items]).values())
            quality = 0.3 + 0.5 * (n % 97) / 97
            for version in versions:
                values = self.copy_scores(version, caption_ids, dict.fromkeys(caption_ids, quality))
                job = EvaluationJob.objects.create(
                    purpose=EvaluationJob.Purpose.SUBMISSION,
                    dataset=dataset,
                    system=system,
                    metric_version=version,
                    status=EvaluationJob.Status.DONE,
                    total=len(caption_ids),
                    done=len(caption_ids),
                    batch_count=10,
                )
                JobBatch.objects.bulk_create(
                    [
                        JobBatch(job=job, index=i, caption_ids=caption_ids[i * 500 : (i + 1) * 500], status="done")
                        for i in range(10)
                    ]
                )
                mean = float(np.mean(values))
                SystemScore.objects.create(
                    system=system, metric_version=version, value=mean, low=mean - 0.01,
                    high=mean + 0.01, count=len(values), images=len(values),
                )  # fmt: skip

    def copy_rows(self, table: str, columns: list[str], rows) -> None:
        from django.db import connection

        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)

    def copy_captions(self, pairs: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
        from django.db import connection

        self.copy_rows(
            "catalog_caption",
            ["item_id", "system_id", "external_id", "text"],
            ((item, system, "", self.text()) for item, system in pairs),
        )
        systems = sorted({system for _, system in pairs})
        with connection.cursor() as cursor:
            cursor.execute("SELECT item_id, system_id, id FROM catalog_caption WHERE system_id = ANY(%s)", [systems])
            return {(item, system): pk for item, system, pk in cursor.fetchall()}

    def copy_scores(self, version, caption_ids: list[int], quality: dict[int, float]):
        """One metric version's scores for these captions, with the detail and statistics its family
        stores; returns the values."""
        import numpy as np

        from scoring.models import Score

        slug = version.metric.slug
        values = np.clip(np.array([quality[c] for c in caption_ids]) + self.rng.normal(0, 0.15, len(caption_ids)), 0, 1)
        binary_key = Score._meta.get_field("input_key").get_internal_type() == "BinaryField"
        now = time.strftime("%Y-%m-%d %H:%M:%S+00")
        columns = [
            "caption_id",
            "metric_version_id",
            "value",
            "detail",
            "statistics",
            "error",
            "input_key",
            "computed_at",
        ]

        def rows():
            for caption, value in zip(caption_ids, values, strict=True):
                digest = hashlib.sha256(f"{version.config_hash}:{caption}".encode()).digest()[:16]  # as Score stores it
                detail, stats = self.family_payload(slug, float(value))
                yield (
                    caption,
                    version.pk,
                    float(value),
                    detail,
                    stats,
                    "",
                    digest if binary_key else digest.hex(),
                    now,
                )

        self.copy_rows("scoring_score", columns, rows())
        return values

    def family_payload(self, slug: str, value: float) -> tuple[str | None, str | None]:
        """(detail, statistics) as JSON text, shaped and sized as the metric stores them."""
        r = self.rng
        if slug.startswith("bleu_"):
            length = int(r.integers(8, 14))
            correct = [max(0, length - k - int(r.integers(0, 4))) for k in range(4)]
            return None, compact([length, length + int(r.integers(-2, 3)), *correct, *[length - k for k in range(4)]])
        if slug == "meteor":
            return None, compact(" ".join(str(x) for x in r.integers(0, 14, 23)))  # Meteor's 23 counts, compacted
        if slug in ("rouge_l", "cider_d", "clip_s", "pac_s"):
            return None, None
        if slug == "spice":
            return json.dumps({"precision": value, "recall": value * 0.9, "tuples": int(r.integers(5, 30))}), None
        if slug.startswith("bertscore"):
            return json.dumps({"precision": value, "recall": value, "reference": int(r.integers(0, 5))}), None
        if slug in ("ref_clip_s", "ref_pac_s"):
            return json.dumps({"image_score": value, "reference_term": value * 0.95}), None
        if slug == "polos":
            return json.dumps({"per_reference": [round(float(x), 6) for x in r.random(5)], "best_reference": 2}), None
        if slug in ("t2i_cycle", "hice_s", "ref_hice_s", "camscore"):
            levels = {
                name: float(r.random()) for name in ("pixel", "semantic", "object", "box", "depth", "global", "local")
            }
            return json.dumps({"generated_image": hashlib.sha256(os.urandom(8)).hexdigest(), "levels": levels}), None
        reply = self.text(int(r.integers(40, 120)))  # a judge: its reply, tokens and reading
        return json.dumps(
            {
                "draws": 1,
                "prompt_tokens": int(r.integers(700, 1200)),
                "completion_tokens": int(r.integers(40, 160)),
                "reply": f"Score: {int(value * 100)}. {reply}",
                "model": "gpt-4o-2024-08-06",
                "expected": value * 100,
                "dimensions": {"accuracy": 3, "completeness": 4, "conciseness": 3, "relevance": 4},
            }
        ), None

    # ---------------------------------------------------------------- measuring

    def timed(self, action: Callable[[], object], repeat: int | None = None, before: Callable | None = None) -> float:
        runs = []
        for _ in range(repeat or self.args.repeat):
            if before:
                before()
            started = time.perf_counter()
            action()
            runs.append(time.perf_counter() - started)
        return statistics.median(runs)

    def measure(self, size: int) -> dict:
        from django.db import connection

        from catalog.models import Dataset

        print(f"measuring at {size:,} board scores", flush=True)
        board, meta = Dataset.objects.get(slug=BOARD), Dataset.objects.get(slug=META)
        result: dict = {"size": size}
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM scoring_score")
            result["score_rows"] = cursor.fetchone()[0]
        result.update(self.bytes_per_row())
        result.update(self.planning(board))
        result["board rebuild s"] = self.timed(lambda: self.board_rebuild(board))
        result.update(self.pages(board))
        result.update(self.metaeval(meta))
        from scoring.services.reaper import jobs_reap

        result["reaper sweep s"] = self.timed(jobs_reap)
        result["export (130k captions) s"] = self.timed(lambda: self.export(META), repeat=3)
        result["export (board) s"] = self.timed(lambda: self.export(BOARD), repeat=3)
        for key, value in result.items():
            print(f"  {key:40} {value:,.4g}" if isinstance(value, float) else f"  {key:40} {value:,}", flush=True)
        if self.args.explain:
            self.explain(board, meta)
        return result

    def explain(self, board, meta) -> None:
        """EXPLAIN (ANALYZE, BUFFERS) of the hot statements, as sent (docs/performance.md keeps them)."""
        from django.db import connection
        from django.test import Client
        from django.test.utils import CaptureQueriesContext

        from scoring.models import MetricVersion, Score
        from scoring.services import batches
        from submissions.models import Submission
        from submissions.selectors import score_page

        version = MetricVersion.objects.get(metric__slug="cider_d", metric__current_version__isnull=False)
        submission = Submission.objects.filter(dataset=board, is_public=True).order_by("-id").first()
        statements = {}
        client = Client(HTTP_HOST="localhost")
        for name, url in {
            "scores API page (dataset and metric)": f"/api/v1/scores/?dataset={BOARD}&metric=cider_d",
            "scores API page (one system)": f"/api/v1/scores/?dataset={BOARD}&system={submission.system.slug}",
        }.items():
            with CaptureQueriesContext(connection) as queries:
                client.get(url)
            statements[name] = (
                next(q["sql"] for q in queries if q["sql"].startswith('SELECT "scoring_score"."id"')),
                (),
            )
        keys = list(
            Score.objects.filter(caption__system=submission.system, metric_version=version).values_list(
                "input_key", flat=True
            )[:500]
        )
        with CaptureQueriesContext(connection) as queries:
            batches._known_scores(version, [bytes(key) for key in keys])
        statements["reuse lookup (500 keys)"] = (queries[0]["sql"], ())
        finalize = Score.objects.filter(metric_version=version, caption__system=submission.system).values_list(
            "value", "statistics", "caption__item_id"
        )
        statements["a system's scores at job end"] = finalize.query.sql_with_params()
        with CaptureQueriesContext(connection) as queries:
            score_page(submission=submission, viewer=None, metric=None, number=600)
        statements["submission page 600"] = (queries[-1]["sql"], ())
        own = Score.objects.own().filter(metric_version=version, caption__item__dataset=meta)
        statements["correlations: the meta set's scores"] = own.values_list(
            "caption_id", "value"
        ).query.sql_with_params()
        statements["generated picture"] = Score.objects.naming_picture("0" * 64).values("id").query.sql_with_params()
        for name, (sql, params) in statements.items():
            with connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
                plan = [row[0] for row in cursor.fetchall()]
            print(f"\n-- {name}\n" + "\n".join(plan), flush=True)

    def bytes_per_row(self) -> dict:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_relation_size('scoring_score'), pg_indexes_size('scoring_score'), "
                "pg_total_relation_size('scoring_score') - pg_relation_size('scoring_score') "
                "- pg_indexes_size('scoring_score'), (SELECT count(*) FROM scoring_score)"
            )
            heap, indexes, toast, rows = cursor.fetchone()
            cursor.execute(
                "SELECT m.slug, m.family = 'ngram' AND m.slug <> 'spice', avg(pg_column_size(s.*)), count(*) "
                "FROM scoring_score s TABLESAMPLE SYSTEM (2) JOIN scoring_metricversion v ON v.id = s.metric_version_id "
                "JOIN scoring_metric m ON m.id = v.metric_id GROUP BY 1, 2"
            )
            per_metric = cursor.fetchall()
            sampled: dict[bool, tuple[float, int]] = {}
            for _, ngram, size, count in per_metric:
                width, seen = sampled.get(ngram, (0.0, 0))
                sampled[ngram] = ((width * seen + float(size) * count) / (seen + count), seen + count)
            cursor.execute(
                "SELECT indexrelid::regclass::text, pg_relation_size(indexrelid), indpred IS NOT NULL FROM pg_index "
                "WHERE indrelid = 'scoring_score'::regclass ORDER BY 2 DESC"
            )
            per_index = cursor.fetchall()
        # The heap's bytes spread over rows by their width (+ 28: tuple header and line pointer).
        total_width = sum((size + 28) * count for size, count in sampled.values())
        heap_per_width = heap / (total_width / sum(count for _, count in sampled.values())) / rows
        ngram_heap = (sampled.get(True, (0, 0))[0] + 28) * heap_per_width
        # Every row has an entry in each full index; a partial one (generated pictures) holds only its own rows.
        full_indexes = sum(size for _, size, partial in per_index if not partial) / rows
        out = {
            "bytes/row (table+indexes+toast)": (heap + indexes + toast) / rows,
            "bytes/row heap": heap / rows,
            "bytes/row indexes": indexes / rows,
            "bytes/row toast": toast / rows,
            "bytes/row n-gram (heap+indexes)": ngram_heap + full_indexes,
            "bytes/row other (heap+indexes)": (sampled.get(False, (0, 0))[0] + 28) * heap_per_width + indexes / rows,
            "database GB": self.database_bytes() / 1e9,
        }
        for name, size, _ in per_index:
            out[f"  index {name} bytes/row"] = size / rows
        for slug, ngram, size, _ in sorted(per_metric):
            if ngram:
                out[f"  {slug} row (heap+indexes)"] = (float(size) + 28) * heap_per_width + full_indexes
        return out

    def database_bytes(self) -> int:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_database_size(current_database())")
            return cursor.fetchone()[0]

    def planning(self, board) -> dict:
        """A new 5,000-caption submission: upload (validation, one transaction), its plan (25 jobs
        and their batches), the reuse lookups every batch makes before scoring, one batch written."""
        from django.contrib.auth import get_user_model

        from catalog.models import Item
        from scoring.models import Score
        from scoring.services import batches
        from scoring.services.rows import caption_rows, input_key
        from submissions.models import Submission
        from submissions.services import MethodInfo, submission_create, submission_plan

        owner, _ = get_user_model().objects.get_or_create(
            username="scale-bench", defaults={"is_staff": True, "is_superuser": True}
        )
        externals = list(Item.objects.filter(dataset=board).order_by("id").values_list("external_id", flat=True))
        upload, plan, lookups, write = [], [], [], []
        for run in range(self.args.repeat):
            Submission.objects.filter(owner=owner).delete()
            content = json.dumps([{"image_id": e, "caption": f"{self.text()} {run}"} for e in externals]).encode()
            started = time.perf_counter()
            submission = submission_create(
                owner=owner, dataset=board, file_name="results.json", content=content,
                method=MethodInfo(f"Scale run {run}"), metrics=[v.metric.slug for v in self.versions()],
            )  # fmt: skip
            upload.append(time.perf_counter() - started)
            started = time.perf_counter()
            jobs = submission_plan(submission_id=submission.pk)
            plan.append(time.perf_counter() - started)
            started = time.perf_counter()
            for job in jobs:
                version = job.metric_version
                for ids in job.batches.order_by("index").values_list("caption_ids", flat=True):
                    rows = caption_rows(ids, media=False)
                    batches._known_scores(
                        version, [input_key(version.config_hash, row, job.context_key) for row in rows]
                    )
            lookups.append(time.perf_counter() - started)
            job = next(job for job in jobs if job.metric_version.metric.slug == "bleu_4")  # BLEU-shaped statistics
            batch = job.batches.order_by("index").first()
            rows = caption_rows(batch.caption_ids, media=False)
            scores = [
                Score(
                    caption_id=row.caption_id, metric_version=job.metric_version, value=0.5, detail=None,
                    statistics=[9, 9, 8, 6, 4, 2, 9, 8, 7, 6], error="",
                    input_key=input_key(job.metric_version.config_hash, row, job.context_key),
                )
                for row in rows
            ]  # fmt: skip
            started = time.perf_counter()
            batches._batch_record(batch, scores, 0.1, reused=0)
            write.append(time.perf_counter() - started)
        Submission.objects.filter(owner=owner).delete()
        messages, size = self.purge_queues()
        return {
            "broker bytes per batch message": size / messages if messages else 0.0,
            "upload 5,000 captions s": statistics.median(upload),
            "plan 25 jobs s": statistics.median(plan),
            "reuse lookups (25 × 10 batches) s": statistics.median(lookups),
            "write one batch (500 scores) s": statistics.median(write),
        }

    def purge_queues(self) -> tuple[int, int]:
        """Empties this run's queues; returns the messages they held and their bytes."""
        import redis
        from django.conf import settings

        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        prefix = settings.CAPBENCH_QUEUE_PREFIX
        messages = size = 0
        for key in client.scan_iter(f"{prefix}*"):
            if client.type(key) == b"list":
                found = client.lrange(key, 0, -1)
                messages, size = messages + len(found), size + sum(len(message) for message in found)
            client.delete(key)
        return messages, size

    def board_rebuild(self, board) -> None:
        from leaderboards.snapshots import board_refresh

        board_refresh(dataset_id=board.pk)

    def pages(self, board) -> dict:
        from django.conf import settings
        from django.core.cache import cache
        from django.core.management import call_command

        if not (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
            call_command("collectstatic", "--noinput", verbosity=0)  # pages name hashed files, as served
        from django.db import connection
        from django.test import Client

        from catalog.models import Item
        from submissions.models import Submission

        item = Item.objects.filter(dataset=board).order_by("id")[IMAGES // 2]
        submission = (
            Submission.objects.filter(dataset=board, is_public=True).order_by("id").values_list("pk", flat=True)[0]
        )
        # A cursor's position is a caption id (api.pagination.ScoreCursor): the board's first and
        # last captions, and the last of all.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT min(c.id), max(c.id) FROM catalog_caption c JOIN catalog_item i ON i.id = c.item_id "
                "WHERE i.dataset_id = %s",
                [board.pk],
            )
            low, high = cursor.fetchone()
            cursor.execute("SELECT max(id) FROM catalog_caption")
            (highest,) = cursor.fetchone()

        def cursor_for(position: int) -> str:
            return base64.b64encode(urlencode({"p": position}).encode()).decode()

        api = "/api/v1/scores/?dataset=scale-board&metric=cider_d"
        urls = {
            "captioner board": f"/datasets/{BOARD}/leaderboard/",
            "metric board": "/metrics/",
            "metric page": "/metrics/cider_d/",
            "item page": f"/datasets/{BOARD}/items/{item.pk}/",
            "submission page": f"/submissions/{submission}/",
            "submission page 600": f"/submissions/{submission}/?page=600",
            "scores API first page": api,
            "scores API middle page": f"{api}&cursor={cursor_for((low + high) // 2)}",
            "scores API last page": f"{api}&cursor={cursor_for(high - 200)}",
            "scores API, all, last page": f"/api/v1/scores/?cursor={cursor_for(highest - 10)}",
        }
        client = Client(HTTP_HOST="localhost")
        client.get(urls["captioner board"])  # what the WSGI entry point does once loaded (capbench/wsgi.py)
        gc.collect()
        gc.freeze()
        out = {}
        for name, url in urls.items():
            cache.clear()
            started = time.perf_counter()
            response = client.get(url)
            first = time.perf_counter() - started
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}: {response.content[:300]!r}")
            runs = []
            for _ in range(self.args.requests):
                started = time.perf_counter()
                client.get(url)
                runs.append(time.perf_counter() - started)
            runs.sort()
            out[f"{name} first ms"] = first * 1000
            out[f"{name} p50 ms"] = statistics.median(runs) * 1000
            out[f"{name} p99 ms"] = runs[min(len(runs) - 1, int(0.99 * len(runs)))] * 1000
        return out

    def metaeval(self, meta) -> dict:
        from scoring.services.correlations import dataset_correlations, dataset_significance

        version = next(v for v in self.versions() if v.metric.slug == "cider_d")
        return {
            "correlations, 1 metric, 130k rows s": self.timed(
                lambda: dataset_correlations(dataset=meta, metric_version=version), repeat=3
            ),
            "significance, 25 metrics s": self.timed(lambda: dataset_significance(dataset=meta), repeat=3),
        }

    def export(self, slug: str) -> None:
        from django.core.management import call_command

        with tempfile.TemporaryDirectory() as folder:
            call_command("datasets", "export", slug, "--output", str(Path(folder) / "export.jsonl"))


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"))


def print_table(results: list[dict]) -> None:
    keys = [key for key in results[0] if key != "size"]
    header = "| measurement | " + " | ".join(f"{r['size'] / 1e6:g}M board scores" for r in results) + " |"
    print()
    print(header)
    print("|---|" + "---:|" * len(results))
    for key in keys:
        cells = []
        for r in results:
            value = r.get(key)
            cells.append(f"{value:,.3g}" if isinstance(value, float) else f"{value:,}")
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    sys.exit(main())
