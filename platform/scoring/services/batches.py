"""Running one batch: load its rows, reuse identical earlier work, call the metric, and store the
scores and the batch's completion in one transaction (a batch delivered twice writes the same rows;
a worker killed mid-batch leaves nothing half-written; a result that comes back after another
delivery recorded or took over the batch writes nothing)."""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Func, IntegerField, Q, Sum
from django.utils import timezone

from capbench_eval import metrics as registry
from capbench_eval.metrics import MetricUnavailable
from plumbing import heartbeat
from plumbing.logs import bind
from scoring.events import job_running
from scoring.models import EvaluationJob, JobBatch, Score
from scoring.services.contexts import job_score, reuse_context, row_parts
from scoring.services.lifecycle import job_end
from scoring.services.pictures import pictures_publish
from scoring.services.rows import caption_rows, input_key

log = logging.getLogger(__name__)


@dataclass
class BatchOutcome:
    class State(models.TextChoices):
        DONE = "done"
        SKIPPED = "skipped"  # already done, or its job ended: a duplicate delivery
        LATE = "late"  # computed, then found finished or taken over: nothing written
        UNAVAILABLE = "unavailable"

    state: State
    scored: int = 0
    reused: int = 0
    failed: int = 0
    job_complete: bool = False
    job_id: int | None = None


class VersionMismatch(RuntimeError):
    pass


def batch_run(*, batch_id: int, worker: str = "") -> BatchOutcome:
    """`worker` names this delivery ("host/task-id"): a second delivery of a batch that another
    one is still working on is skipped; the same delivery coming back (a redelivered message) may
    take it over."""
    slug_and_hash = (
        JobBatch.objects.filter(pk=batch_id)
        .values_list("job__metric_version__metric__slug", "job__metric_version__config_hash", "job_id")
        .first()
    )
    if slug_and_hash is None:
        return BatchOutcome(BatchOutcome.State.SKIPPED)
    implementation = registry.get(slug_and_hash[0])
    if implementation.config_hash() != slug_and_hash[1]:
        # Checked before claiming: a worker still on other code leaves the batch (and its attempts) alone.
        raise VersionMismatch(
            f"this worker computes {slug_and_hash[0]} with configuration "
            f"{implementation.config_hash()}, the job asks for {slug_and_hash[1]}"
        )
    batch = _batch_claim(batch_id, worker, job_id=slug_and_hash[2])
    if batch is None:
        return BatchOutcome(BatchOutcome.State.SKIPPED)
    job = batch.job
    version = job.metric_version
    bind(job_id=job.pk, metric=slug_and_hash[0])
    availability = implementation.availability()
    if not availability.available:
        return _unavailable(job, availability.reason)
    started = time.perf_counter()
    needs_media = "media" in implementation.needs
    job_rows = caption_rows(batch.caption_ids, media=needs_media)
    parts = row_parts(job, batch.caption_ids) if implementation.corpus_dependent else [""] * len(job_rows)
    keys = [
        input_key(version.config_hash, job_row, reuse_context(job, part))
        for job_row, part in zip(job_rows, parts, strict=True)
    ]
    known = _known_scores(version, keys)
    todo = [(job_row, key) for job_row, key in zip(job_rows, keys, strict=True) if key not in known]
    runnable = [(job_row, key) for job_row, key in todo if not needs_media or job_row.row.media]
    computed: dict[bytes, dict] = {}
    if runnable:
        try:
            part_of = dict(zip(batch.caption_ids, parts, strict=True))
            scored = [job_row for job_row, _ in runnable]
            result = job_score(job, implementation, scored, [part_of[job_row.caption_id] for job_row in scored])
        except MetricUnavailable as error:
            return _unavailable(job, str(error))
        for index, (_, key) in enumerate(runnable):
            computed[key] = _stored_fields(result, index)
    # Before any score names one. A reused score's picture is published if this machine has it
    # (scores stored before pictures went to the file store); else another worker already did.
    pictures_publish([fields["detail"] for fields in computed.values()])
    pictures_publish([fields["detail"] for fields in known.values()], required=False)
    scores, failed = [], 0
    for job_row, key in zip(job_rows, keys, strict=True):
        fields = (
            known.get(key)
            or computed.get(key)
            or {
                "value": None,
                "detail": None,
                "statistics": None,
                "error": "the image or video file is not attached to this dataset",
            }
        )
        failed += fields["value"] is None
        scores.append(Score(caption_id=job_row.caption_id, metric_version=version, input_key=key, **fields))
    seconds = time.perf_counter() - started
    reused = len(job_rows) - len(todo)
    complete = _batch_record(batch, scores, seconds, reused=reused)
    if isinstance(complete, str):
        log.warning("batch %d of job %d: late result discarded: %s", batch.index + 1, job.pk, complete)
        return BatchOutcome(BatchOutcome.State.LATE, job_id=job.pk)
    log.info(
        "batch %d of job %d stored: %d scored, %d reused, %d without a number, %.2f s",
        batch.index + 1, job.pk, len(computed), reused, failed, seconds,
    )  # fmt: skip
    return BatchOutcome(
        BatchOutcome.State.DONE,
        scored=len(computed),
        reused=reused,
        failed=failed,
        job_complete=complete,
        job_id=job.pk,
    )


def _batch_claim(batch_id: int, worker: str, *, job_id: int) -> JobBatch | None:
    # Lock order everywhere: job, then its batches (then nothing else), so claims, records and
    # job_end never wait on each other in a circle.
    now = timezone.now()
    with transaction.atomic():
        job = (
            EvaluationJob.objects.select_for_update(of=("self",))
            .select_related("metric_version__metric")
            .get(pk=job_id)
        )
        batch = JobBatch.objects.select_for_update().get(pk=batch_id)
        if batch.status == JobBatch.Status.DONE or job.is_final:
            return None
        # Another delivery holds it, within the task time limit, and its worker still beats: a
        # worker killed on another machine never says so, its heartbeat just stops. The same task id
        # on another host is the same delivery (a retry another worker took): it takes the batch back.
        held_elsewhere = (
            batch.status == JobBatch.Status.RUNNING
            and not same_delivery(batch.worker, worker)
            and batch.started_at
            and batch.started_at > now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)
            and heartbeat.alive(batch.holder)
        )
        if held_elsewhere:
            return None
        if batch.attempts >= settings.CAPBENCH_BATCH_ATTEMPTS:
            # Started that often and never recorded: the worker died on it each time (out of memory, say).
            transaction.on_commit(
                lambda: job_end(
                    job_id=job_id,
                    status=EvaluationJob.Status.FAILED,
                    error=f"batch {batch.index + 1} was started {batch.attempts} times and its worker stopped "
                    "each time before it finished (out of memory or killed?)",
                )
            )
            return None
        batch.status, batch.worker, batch.started_at = JobBatch.Status.RUNNING, worker, now
        batch.attempts += 1
        batch.save(update_fields=["status", "worker", "attempts", "started_at"])
        job_started = job.status == EvaluationJob.Status.QUEUED
        if job_started:
            job.status, job.started_at = EvaluationJob.Status.RUNNING, now
            job.save(update_fields=["status", "started_at"])
    if job_started:  # outside the transaction: never hold job and submission together (submissions.signals)
        job_running.send(sender=EvaluationJob, system_id=job.system_id, started_at=now)
    batch.job = job
    return batch


def same_delivery(worker: str, other: str) -> bool:
    """Whether two deliveries ("host/task-id") are one: the same Celery task id, whichever host took
    the message (a task's retry keeps its id and may go to any worker)."""
    task_id = worker.partition("/")[2]
    return worker == other or (bool(task_id) and task_id == other.partition("/")[2])


def _known_scores(version, keys: list[bytes]) -> dict[bytes, dict]:
    """Stored numbers for identical earlier work (the same input key), by key: one statement with
    the keys as one text parameter of hex (an `IN` list of 500 would be 500 parameters to build,
    and an array of bytes is escaped byte by byte), each found through score_reuse."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT input_key, value, detail, statistics FROM scoring_score "
            "WHERE input_key = ANY(ARRAY(SELECT decode(key, 'hex') FROM unnest(string_to_array(%s, ',')) AS key)) "
            "AND metric_version_id = %s AND value IS NOT NULL",
            [",".join(key.hex() for key in set(keys)), version.pk],
        )
        found = cursor.fetchall()
    return {
        bytes(key): {
            "value": value,
            "detail": json.loads(detail) if isinstance(detail, str) else detail,
            "statistics": None if statistics is None else json.loads(statistics),
            "error": "",
        }
        for key, value, detail, statistics in found
    }


def _stored_fields(result, index: int) -> dict:
    value = result.scores[index]
    ok = value is not None and not math.isnan(value) and not math.isinf(value)
    detail = storable(result.details[index]) if result.details else None
    return {
        "value": float(value) if ok else None,
        "detail": detail,
        "statistics": result.statistics[index] if result.statistics else None,
        "error": "" if ok else (detail or {}).get("error", "the metric returned no number for this caption"),
    }


def storable(value):
    """PostgreSQL text and jsonb cannot hold NUL, which a model's byte-level reply can contain: each
    one becomes U+FFFD, as an undecodable byte would."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {storable(key): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def _batch_record(batch: JobBatch, scores: list[Score], seconds: float, reused: int) -> bool | str:
    """Scores, the batch's completion and the job's progress, together or not at all: whether the
    job is complete. For a late result nothing is written and the answer says why (a text): the job
    ended (done, failed or cancelled), or another delivery recorded the batch or holds it now (this
    worker was cut off past its heartbeat and the reaper sent the batch again). A batch is recorded
    once, so the stored scores are those its job's numbers were made from."""
    failed = sum(score.value is None for score in scores)
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update(of=("self",)).get(pk=batch.job_id)
        if job.is_final:
            return f"its job had ended ({job.status}) before the result came back"
        taken_over = Q(status=JobBatch.Status.RUNNING) & ~Q(worker=batch.worker)
        recorded = (
            JobBatch.objects.filter(pk=batch.pk)
            .exclude(status=JobBatch.Status.DONE)
            .exclude(taken_over)
            .update(
                status=JobBatch.Status.DONE,
                finished_at=timezone.now(),
                seconds=seconds,
                failed=failed,
                reused=reused,
                error="",
            )
        )
        if not recorded:
            status, holder = JobBatch.objects.values_list("status", "worker").get(pk=batch.pk)
            if status == JobBatch.Status.DONE:
                return f"another delivery ({holder}) had recorded the batch"
            return f"another delivery ({holder}) holds the batch now"
        scores_write(scores)
        totals = JobBatch.objects.filter(job=job, status=JobBatch.Status.DONE).aggregate(
            failed=Sum("failed"),
            reused=Sum("reused"),
            seconds=Sum("seconds"),
            done=Sum(Func("caption_ids", function="jsonb_array_length", output_field=IntegerField())),
        )
        job.done = totals["done"] or 0
        job.failed, job.reused = totals["failed"] or 0, totals["reused"] or 0
        job.compute_seconds = totals["seconds"] or 0.0
        job.save(update_fields=["done", "failed", "reused", "compute_seconds"])
        return job.done >= job.total


SCORE_COLUMNS = (
    "caption_id",
    "metric_version_id",
    "value",
    "detail",
    "statistics",
    "error",
    "input_key",
    "computed_at",
)
SCORE_TYPES = ("int8", "int8", "float8", "text", "text", "text", "bytea", "timestamptz")  # JSON goes as its text


def scores_write(scores: list[Score]) -> None:
    """Store scores, replacing any of the same (caption, metric version): COPY into a temporary
    table, then one INSERT … ON CONFLICT from it. Against `bulk_create`'s one INSERT of 8 parameters
    per row this saves building and sending thousands of parameters (docs/performance.md). Inside
    the caller's transaction; the temporary table empties itself at commit."""
    if not scores:
        return
    now = timezone.now()
    statistics = Score._meta.get_field("statistics")
    columns = ", ".join(SCORE_COLUMNS)
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS incoming_score ON COMMIT DELETE ROWS "
            f"AS SELECT {columns} FROM scoring_score WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY incoming_score ({columns}) FROM STDIN") as copy:
            copy.set_types(SCORE_TYPES)
            for score in scores:
                copy.write_row(
                    (
                        score.caption_id,
                        score.metric_version_id,
                        score.value,
                        None if score.detail is None else json.dumps(storable(score.detail), ensure_ascii=False),
                        statistics.get_prep_value(score.statistics),
                        storable(score.error),
                        None if score.input_key is None else bytes(score.input_key),
                        now,
                    )
                )
        updates = ", ".join(f"{name} = EXCLUDED.{name}" for name in SCORE_COLUMNS[2:])
        cursor.execute(
            f"INSERT INTO scoring_score ({columns}) SELECT {columns} FROM incoming_score "
            f"ON CONFLICT (caption_id, metric_version_id) DO UPDATE SET {updates}"
        )
        cursor.execute("DELETE FROM incoming_score")  # (TRUNCATE would give the table a new file each time)


def _unavailable(job: EvaluationJob, reason: str) -> BatchOutcome:
    job_end(job_id=job.pk, status=EvaluationJob.Status.UNAVAILABLE, error=f"unavailable: {reason}")
    return BatchOutcome(BatchOutcome.State.UNAVAILABLE)


def job_of(batch_id: int) -> int:
    return JobBatch.objects.values_list("job_id", flat=True).get(pk=batch_id)
