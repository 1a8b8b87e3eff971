"""Finalising a job once its last batch is recorded: the per-system numbers with their intervals
(scoring.services.numbers) and, on a meta-evaluation dataset, the metric's correlations with people."""

from __future__ import annotations

from catalog.models import System
from scoring.models import EvaluationJob, JobBatch, SystemScore
from scoring.services.correlations import dataset_correlations, dataset_significance
from scoring.services.lifecycle import job_end
from scoring.services.numbers import system_number_store


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
    """The numbers of the job's systems (its own, or every caption source of its dataset)."""
    systems = (
        [job.system_id]
        if job.system_id
        else list(System.objects.own().filter(dataset=job.dataset).values_list("pk", flat=True))
    )
    stored = [system_number_store(system_id=system_id, version=job.metric_version) for system_id in systems]
    return [found for found in stored if found is not None]
