"""How jobs end: finalising (system numbers, correlations), failing, recovering batches a dead
worker held, and reaping jobs stuck past their limit. A submission's status follows its jobs through
scoring.events (submissions.signals)."""

from __future__ import annotations

import logging
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from catalog.models import System
from evaluation import metrics as registry
from evaluation.metaeval.bootstrap import cluster_bootstrap
from evaluation.metrics import Metric
from scoring.events import job_ended, jobs_swept
from scoring.models import EvaluationJob, JobBatch, Score, SystemScore
from scoring.services.correlations import dataset_correlations, dataset_significance
from scoring.services.metrics import metrics_sync
from scoring.services.planning import batches_enqueue, versions_rescore

log = logging.getLogger(__name__)


def job_finalize(*, job_id: int) -> EvaluationJob:
    """Once every batch is done: per-system numbers, then the job is done (idempotent)."""
    job = EvaluationJob.objects.select_related("metric_version__metric", "dataset").get(pk=job_id)
    if job.is_final:
        return job
    if JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).exists():
        return job
    system_scores_compute(job=job)
    if job.purpose == EvaluationJob.Purpose.DATASET:
        # Before the job is done: if this fails, the job stays open and the reaper finalises again.
        dataset_correlations(dataset=job.dataset, metric_version=job.metric_version)
        dataset_significance(dataset=job.dataset)
    job_end(job_id=job.pk, status=EvaluationJob.Status.DONE)
    job.refresh_from_db()
    return job


def system_scores_compute(*, job: EvaluationJob) -> list[SystemScore]:
    implementation = registry.get(job.metric_version.metric.slug)
    systems = [job.system] if job.system else list(System.objects.own().filter(dataset=job.dataset))
    results = []
    for system in systems:
        rows = list(
            Score.objects.filter(metric_version=job.metric_version, caption__system=system)
            .order_by("caption_id")
            .values_list("value", "statistics", "caption__item_id")
        )
        if not rows:
            continue
        values = [value for value, _, _ in rows if value is not None]
        statistics = [s for value, s, _ in rows if value is not None]
        low = high = None
        if type(implementation).aggregate is Metric.aggregate and len(values) > 1:  # the number is a mean
            items = [item for value, _, item in rows if value is not None]
            low, high = mean_interval(np.array(values), items)
        try:
            corpus = implementation.aggregate(values, None if None in statistics else statistics)
        except ValueError:  # statistics missing (scores stored before the metric kept them)
            corpus = None
        results.append(
            SystemScore.objects.update_or_create(
                system=system,
                metric_version=job.metric_version,
                defaults={
                    "value": corpus,
                    "mean": sum(values) / len(values) if values else None,
                    "low": low,
                    "high": high,
                    "count": len(values),
                    "failed": len(rows) - len(values),
                },
            )[0]
        )
    return results


def mean_interval(values: np.ndarray, items: list, replicates: int = 1000, seed: int = 12345) -> tuple[float, float]:
    """95% percentile interval of a system's mean score, resampling its items."""

    def statistic(weights):
        return [float(np.average(values, weights=weights))] if weights is not None else [float(values.mean())]

    interval = cluster_bootstrap(statistic, items, replicates=replicates, seed=seed)[0]
    return interval.low, interval.high


def job_end(*, job_id: int, status: str, error: str = "") -> None:
    with transaction.atomic():
        job = EvaluationJob.objects.select_for_update().get(pk=job_id)
        if job.is_final:
            return
        job.status, job.error, job.finished_at = status, error, timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        if status != EvaluationJob.Status.DONE:
            JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).update(
                status=JobBatch.Status.FAILED, error=error[:2000]
            )
        transaction.on_commit(
            lambda: job_ended.send(sender=EvaluationJob, dataset_id=job.dataset_id, system_id=job.system_id)
        )


def batch_attempt_failed(*, batch_id: int, error: str, final: bool) -> None:
    """An attempt raised: back to the queue for a retry, or (last attempt) the job fails."""
    batch = JobBatch.objects.filter(pk=batch_id).first()
    if batch is None:
        return
    if final:
        job_end(
            job_id=batch.job_id,
            status=EvaluationJob.Status.FAILED,
            error=f"batch {batch.index + 1} failed after {batch.attempts} attempt(s): {error}",
        )
    else:  # the task's retry is on its way: queued again, as of now
        JobBatch.objects.filter(pk=batch_id, status=JobBatch.Status.RUNNING).update(
            status=JobBatch.Status.QUEUED, error=error[:2000], enqueued_at=timezone.now()
        )


def jobs_cancel(*, system_id: int, reason: str) -> int:
    """Fails the system's open jobs (a withdrawn submission's: submissions passes its system)."""
    open_jobs = EvaluationJob.objects.filter(system_id=system_id).exclude(status__in=EvaluationJob.FINAL)
    ids = list(open_jobs.values_list("pk", flat=True))
    for job_id in ids:
        job_end(job_id=job_id, status=EvaluationJob.Status.FAILED, error=f"cancelled: {reason}")
    return len(ids)


def batches_recover_worker(*, worker: str) -> int:
    """A worker starting under `worker`'s name: whatever that name held is from a dead process."""
    orphaned = JobBatch.objects.filter(worker__startswith=f"{worker}/", status=JobBatch.Status.RUNNING)
    jobs = set(orphaned.values_list("job_id", flat=True))
    ids = list(orphaned.values_list("pk", flat=True))
    orphaned.update(status=JobBatch.Status.QUEUED, error=f"recovered: worker {worker} restarted")
    for job_id in jobs:
        batches_enqueue(job_id=job_id, only_ids=ids)
    if ids:
        log.warning("re-queued %d batch(es) that %s held when it stopped", len(ids), worker)
    return len(ids)


REAPER_LOCK = 7_240_001  # a Postgres advisory lock: one sweep at a time across all workers


def jobs_reap(*, now=None) -> dict[str, int]:
    """The periodic sweep: finalise complete jobs, re-send or fail batches stuck past their time
    limit, fail jobs that have run past the job limit, re-send undelivered queued batches, settle
    submissions whose jobs are all over, and re-score under new metric versions. One item's error
    is logged and skips that item only."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [REAPER_LOCK])
        if not cursor.fetchone()[0]:
            return {"skipped": 1}
    try:
        return _sweep(now or timezone.now())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [REAPER_LOCK])


def _each(items, action, counts: dict, key: str) -> None:
    for item in items:
        try:
            counts[key] += action(item) or 0
        except Exception:
            counts["errors"] += 1
            log.exception("reaper: %s failed for %s", key, item)


def _sweep(now) -> dict[str, int]:
    counts = dict.fromkeys(("finalised", "requeued", "failed", "resent", "settled", "rescoring", "errors"), 0)
    open_jobs = EvaluationJob.objects.exclude(status__in=EvaluationJob.FINAL)
    limit = settings.CAPBENCH_JOB_TIME_LIMIT

    def fail_overdue(job: EvaluationJob) -> int:
        job_end(
            job_id=job.pk,
            status=EvaluationJob.Status.FAILED,
            error=f"stuck: not finished {limit // 60} minutes after it was queued "
            f"({job.done} of {job.total} captions scored)",
        )
        return 1

    def finalise(job: EvaluationJob) -> int:
        if JobBatch.objects.filter(job=job).exclude(status=JobBatch.Status.DONE).exists():
            return 0
        job_finalize(job_id=job.pk)
        return 1

    def unstick(batch: JobBatch) -> int:
        if batch.attempts >= settings.CAPBENCH_BATCH_ATTEMPTS:
            batch_attempt_failed(batch_id=batch.pk, error="stuck past the task time limit", final=True)
            return 1
        moved = JobBatch.objects.filter(
            pk=batch.pk, status=JobBatch.Status.RUNNING, started_at=batch.started_at
        ).update(status=JobBatch.Status.QUEUED, error="stuck past the task time limit")
        return batches_enqueue(job_id=batch.job_id, only_ids=[batch.pk]) if moved else 0

    def resend(job_id: int) -> int:
        stale = undelivered.filter(job_id=job_id).values_list("pk", flat=True)
        return batches_enqueue(job_id=job_id, only_ids=list(stale))

    _each(open_jobs.filter(queued_at__lt=now - timedelta(seconds=limit)), fail_overdue, counts, "failed")
    _each(list(open_jobs.all()), finalise, counts, "finalised")
    stuck = JobBatch.objects.filter(
        status=JobBatch.Status.RUNNING,
        job__in=open_jobs,
        started_at__lt=now - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60),
    )
    _each(list(stuck), unstick, counts, "requeued")
    undelivered = JobBatch.objects.filter(job__in=open_jobs, status=JobBatch.Status.QUEUED).filter(
        Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=now - timedelta(seconds=settings.CAPBENCH_BATCH_RESEND_AFTER))
    )
    _each(set(undelivered.values_list("job_id", flat=True)), resend, counts, "resent")
    # Submissions settle theirs here ("settled"): submissions.signals.settle_submissions.
    jobs_swept.send(
        sender=EvaluationJob, counts=counts, each=lambda items, action, key: _each(items, action, counts, key)
    )
    _each([None], lambda _: metrics_sync() and 0, counts, "rescoring")
    _each([None], lambda _: len(versions_rescore()), counts, "rescoring")
    return counts
