"""Turning "score this caption set with these metrics" into EvaluationJobs, their batches and the
queue messages. Planning twice creates nothing twice. A submission's plan is submissions.services.submission_plan."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog.models import Caption, Dataset, System
from evaluation import metrics as registry
from scoring.events import rescore_excluded
from scoring.models import EvaluationJob, JobBatch, Metric, MetricVersion
from scoring.queues import enqueue_many
from scoring.services.metrics import metric_versions_current
from scoring.services.rows import caption_multiplicity, caption_rows, context_key

BATCH_TASK = "scoring.run_batch"


def longest_first(versions: list[MetricVersion]) -> list[MetricVersion]:
    """Versions in the order their jobs are sent: the costliest metric first (`Metric.cost`, from
    the registry), so that its batches share the workers with the quick ones instead of running
    alone at the end; by slug among equals."""

    def cost(version: MetricVersion) -> float:
        try:
            return registry.get(version.metric.slug).cost
        except registry.UnknownMetric:
            return 0.0

    return sorted(versions, key=lambda version: (-cost(version), version.metric.slug))


def batch_size(slug: str) -> int | None:
    """The metric's own batch size (`Metric.batch_size`), if it has one."""
    try:
        return registry.get(slug).batch_size
    except registry.UnknownMetric:
        return None


def dataset_plan(*, dataset: Dataset, slugs: list[str] | None = None) -> list[EvaluationJob]:
    """Every candidate caption of the dataset (its own systems, not submissions) × each metric."""
    versions = longest_first(metric_versions_current(slugs))
    captions = list(Caption.objects.own().filter(item__dataset=dataset).order_by("id").values_list("id", flat=True))
    return [
        job_plan(
            purpose=EvaluationJob.Purpose.DATASET,
            dataset=dataset,
            system=None,
            version=version,
            caption_ids=captions,
        )
        for version in versions
    ]


def job_plan(*, purpose, dataset, system, version: MetricVersion, caption_ids: list[int]) -> EvaluationJob:
    metric = version.metric
    with transaction.atomic():
        job, created = EvaluationJob.objects.select_for_update().get_or_create(
            dataset=dataset,
            system=system,
            metric_version=version,
            defaults={"purpose": purpose, "total": len(caption_ids)},
        )
        if not created and (job.is_final or job.batch_count):
            return job  # planned before: the batches (and the reaper) carry it on
        if metric.corpus_dependent:
            rows = [job_row.row.references for job_row in caption_rows(caption_ids, media=False)]
            job.context_key = context_key(version.config_hash, rows, caption_multiplicity(caption_ids))
        size = batch_size(metric.slug) or settings.CAPBENCH_BATCH_SIZE.get(metric.queue, 500)
        slices = [caption_ids[start : start + size] for start in range(0, len(caption_ids), size)]
        JobBatch.objects.bulk_create([JobBatch(job=job, index=i, caption_ids=ids) for i, ids in enumerate(slices)])
        job.batch_count, job.total = len(slices), len(caption_ids)
        if not slices:
            job.status, job.finished_at = EvaluationJob.Status.DONE, timezone.now()
        job.save()
        transaction.on_commit(lambda: batches_enqueue(job_id=job.pk))
    return job


def batches_enqueue(*, job_id: int, only_ids: list[int] | None = None) -> int:
    """Send the job's queued batches to its metric's queue; returns how many reached the broker."""
    job = EvaluationJob.objects.select_related("metric_version__metric").get(pk=job_id)
    batches = JobBatch.objects.filter(job=job, status=JobBatch.Status.QUEUED)
    if only_ids is not None:
        batches = batches.filter(pk__in=only_ids)
    ids = list(batches.order_by("index").values_list("pk", flat=True))
    sent = enqueue_many(BATCH_TASK, [[batch_id] for batch_id in ids], kind=job.metric_version.metric.queue)
    # One statement for all (a job has tens of batches): those the broker took are marked sent.
    JobBatch.objects.filter(pk__in=ids[:sent]).update(enqueued_at=timezone.now())
    return sent


def versions_rescore() -> list[EvaluationJob]:
    """Caption sets scored by an older version of a metric and not yet by its current one get a
    job for the current version. The older scores stay (and stay shown) until it is done. Systems a
    layer above excludes (scoring.events.rescore_excluded: a withdrawn submission's) are left alone."""
    excluded = {system_id for _, ids in rescore_excluded.send(sender=EvaluationJob) for system_id in ids or ()}
    jobs = []
    for metric in Metric.objects.filter(is_registered=True, current_version__isnull=False).select_related(
        "current_version"
    ):
        current = metric.current_version
        if current is None:  # excluded by the query; says so to the type checker
            continue
        older = (
            EvaluationJob.objects.filter(metric_version__metric=metric, status=EvaluationJob.Status.DONE)
            .exclude(metric_version=current)
            .values_list("dataset_id", "system_id")
            .distinct()
        )
        for dataset_id, system_id in older:
            if EvaluationJob.objects.filter(
                dataset_id=dataset_id, system_id=system_id, metric_version=current
            ).exists():
                continue
            if system_id in excluded:
                continue
            if system_id:
                captions = Caption.objects.filter(system_id=system_id)
            else:
                captions = Caption.objects.own().filter(item__dataset_id=dataset_id)
            jobs.append(
                job_plan(
                    purpose=EvaluationJob.Purpose.SUBMISSION if system_id else EvaluationJob.Purpose.DATASET,
                    dataset=Dataset.objects.get(pk=dataset_id),
                    system=System.objects.get(pk=system_id) if system_id else None,
                    version=current,
                    caption_ids=list(captions.order_by("id").values_list("id", flat=True)),
                )
            )
    return jobs
