"""Finalising a job once its last batch is recorded: the per-system numbers (the corpus value, the
mean and its interval) and, on a meta-evaluation dataset, the metric's correlations with people."""

from __future__ import annotations

import numpy as np

from catalog.models import System
from evaluation import metrics as registry
from evaluation.metaeval.bootstrap import cluster_bootstrap
from evaluation.metrics import Metric
from scoring.models import EvaluationJob, JobBatch, Score, SystemScore
from scoring.services.correlations import dataset_correlations, dataset_significance
from scoring.services.lifecycle import job_end


def job_finalize(*, job_id: int) -> EvaluationJob:
    """Once every batch is done: per-system numbers, then the job is done (idempotent)."""
    job = EvaluationJob.objects.select_related("metric_version__metric", "dataset", "system").get(pk=job_id)
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
