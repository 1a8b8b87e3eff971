"""Turning "score this caption set with these metrics" into EvaluationJobs, their batches and the
queue messages. Planning twice creates nothing twice. A submission's plan is submissions.services.submission_plan.

A metric this server cannot compute (`Metric.available` false, set by `metrics_sync`, which every plan
and every sweep runs first) gets its job ended as unavailable at once: no batch, nothing on a queue,
nothing counted as work to do. Once `metrics_sync` finds it available, the sweep's `versions_rescore`
plans those caption sets again (`job_plan` re-opens the unavailable job)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from capbench_eval import metrics as registry
from catalog.models import Caption, Dataset, System
from catalog.visibility import withdrawn_q
from scoring.events import job_ended
from scoring.models import EvaluationJob, JobBatch, Metric, MetricVersion
from scoring.queues import enqueue_many
from scoring.services.contexts import corpus_rule_now
from scoring.services.metrics import metric_versions_current
from scoring.services.rows import caption_corpora, caption_rows, context_key, context_rule

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
    jobs = [
        job_plan(
            purpose=EvaluationJob.Purpose.DATASET,
            dataset=dataset,
            system=None,
            version=version,
            caption_ids=captions,
        )
        for version in versions
    ]
    if any(job.status == EvaluationJob.Status.UNAVAILABLE for job in jobs):
        # Ended without a batch, so without job_end: the board learns of it once (its cells say why).
        transaction.on_commit(lambda: job_ended.send(sender=EvaluationJob, dataset_id=dataset.pk, system_id=None))
    return jobs


def job_plan(*, purpose, dataset, system, version: MetricVersion, caption_ids: list[int]) -> EvaluationJob:
    """The caption set's job for `version`, its batches sent on commit; for a metric not available
    here, a job ended unavailable with no batch. An unavailable job of a metric available again is
    planned anew (its older batches dropped; scores already stored are reused by the batches)."""
    metric = version.metric
    with transaction.atomic():
        job, created = EvaluationJob.objects.select_for_update().get_or_create(
            dataset=dataset,
            system=system,
            metric_version=version,
            defaults={"purpose": purpose, "total": len(caption_ids)},
        )
        if not metric.available:
            return _unavailable(job, metric) if created else job
        if not created and (job.status == EvaluationJob.Status.UNAVAILABLE or _corpus_moved(job)):
            _reopen(job)
        elif not created and (job.is_final or job.batch_count):
            return job  # planned before: the batches (and the reaper) carry it on
        if metric.corpus_dependent:
            rows = [job_row.row.references for job_row in caption_rows(caption_ids, media=False)]
            rule = corpus_rule_now(job)
            job.context_key = context_key(version.config_hash, rule, rows, caption_corpora(caption_ids, rule))
        size = batch_size(metric.slug) or settings.CAPBENCH_BATCH_SIZE.get(metric.queue, 500)
        slices = [caption_ids[start : start + size] for start in range(0, len(caption_ids), size)]
        JobBatch.objects.bulk_create([JobBatch(job=job, index=i, caption_ids=ids) for i, ids in enumerate(slices)])
        job.batch_count, job.total = len(slices), len(caption_ids)
        if not slices:
            job.status, job.finished_at = EvaluationJob.Status.DONE, timezone.now()
        job.save()
        transaction.on_commit(lambda: batches_enqueue(job_id=job.pk))
    return job


def _corpus_moved(job: EvaluationJob) -> bool:
    """A finished job of a corpus-dependent metric planned under another corpus rule than its
    dataset's protocol states now (docs/metaeval.md §7.7): its scores are of another corpus."""
    planned = context_rule(job.context_key)
    return job.is_final and planned is not None and planned[0] != corpus_rule_now(job)


def _unavailable(job: EvaluationJob, metric: Metric) -> EvaluationJob:
    job.status, job.finished_at = EvaluationJob.Status.UNAVAILABLE, timezone.now()
    job.error = f"unavailable: {metric.unavailable_reason or 'not available on this server'}"
    job.save(update_fields=["status", "finished_at", "error"])
    return job


def _reopen(job: EvaluationJob) -> None:
    JobBatch.objects.filter(job=job).delete()
    job.status, job.error, job.started_at, job.finished_at = EvaluationJob.Status.QUEUED, "", None, None
    job.done = job.failed = job.reused = job.batch_count = 0
    job.compute_seconds = 0.0


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
    job for the current version. The older scores stay (and stay shown) until it is done. Caption
    sets whose job ended unavailable get one too once the metric is available (`_waiting`). A
    withdrawn submission's system is left alone (`_rescorable`).
    A dataset's own candidates scored by a corpus-dependent metric under a corpus rule its protocol
    no longer states are scored again by the current version (`_moved_corpora`)."""
    jobs = []
    for metric in Metric.objects.filter(is_registered=True, current_version__isnull=False).select_related(
        "current_version"
    ):
        current = metric.current_version
        if current is None:  # excluded by the query; says so to the type checker
            continue
        older = (
            _rescorable()
            .filter(metric_version__metric=metric, status=EvaluationJob.Status.DONE)
            .exclude(metric_version=current)
            .values_list("dataset_id", "system_id")
            .distinct()
        )
        for job in _moved_corpora(metric, current):  # a protocol's corpus rule changed: scored again
            captions = Caption.objects.own().filter(item__dataset_id=job.dataset_id).order_by("id")
            jobs.append(
                job_plan(
                    purpose=EvaluationJob.Purpose.DATASET,
                    dataset=job.dataset,
                    system=None,
                    version=current,
                    caption_ids=list(captions.values_list("id", flat=True)),
                )
            )
        for dataset_id, system_id in {*older, *_waiting(metric)}:
            if not _needs_plan(metric, current, dataset_id, system_id):
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


def _rescorable() -> QuerySet[EvaluationJob]:
    """Jobs whose caption set may be scored again: all but a withdrawn submission's (its system is
    no longer shown: catalog.visibility.withdrawn_q)."""
    return EvaluationJob.objects.exclude(withdrawn_q(to_submission="system__submission__"))


def _moved_corpora(metric: Metric, current: MetricVersion) -> list[EvaluationJob]:
    """The current version's finished dataset jobs whose corpus rule is no longer their protocol's."""
    if not metric.corpus_dependent:
        return []
    done = EvaluationJob.objects.filter(
        metric_version=current, purpose=EvaluationJob.Purpose.DATASET, status=EvaluationJob.Status.DONE
    ).select_related("dataset")
    return [job for job in done if _corpus_moved(job)]


def _ended_unavailable_before_sync(metric: Metric) -> Q:
    """Jobs that ended unavailable before metrics_sync last changed the metric (`synced_at`: it
    marked it available then). One that a worker found unavailable since is not planned again and
    again at every sweep: only a change that metrics_sync sees re-opens it."""
    return Q(status=EvaluationJob.Status.UNAVAILABLE) & (
        Q(finished_at__isnull=True) | Q(finished_at__lt=metric.synced_at)
    )


def _waiting(metric: Metric) -> set[tuple[int, int | None]]:
    """The caption sets waiting for the metric: their job ended unavailable, and it is available now."""
    if not metric.available:
        return set()
    waiting = _rescorable().filter(metric_version__metric=metric).filter(_ended_unavailable_before_sync(metric))
    return set(waiting.values_list("dataset_id", "system_id").distinct())


def _needs_plan(metric: Metric, current: MetricVersion, dataset_id: int, system_id: int | None) -> bool:
    """No job for the current version yet, or one that ended unavailable and may run now."""
    caption_set = Q(system_id=system_id) if system_id else Q(system__isnull=True)
    planned = EvaluationJob.objects.filter(caption_set, dataset_id=dataset_id, metric_version=current)
    if not planned.exists():
        return True
    return metric.available and planned.filter(_ended_unavailable_before_sync(metric)).exists()
