"""Reads of submissions for pages and the API."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from scoring.models import EvaluationJob, JobBatch
from submissions.cards import PLAIN_WORDS
from submissions.models import Submission


def submissions_of(*, owner) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=owner).select_related("dataset", "system")


def submission_shown(*, pk: int, viewer) -> Submission:
    """The submission if `viewer` may see it (catalog.visibility), else 404 — the same answer as for
    an id that does not exist, so ids of private submissions are not confirmed."""
    return get_object_or_404(Submission.objects.visible_to(viewer).select_related("dataset", "system", "owner"), pk=pk)


def submission_progress(*, submission: Submission, detail: bool = False) -> dict:
    """Per metric: state, done/total, what went wrong in plain words (`detail`, for staff: the
    job's own error, which may name paths and settings of the server), and how many batches wait
    ahead."""
    jobs = submission.jobs().select_related("metric_version__metric").order_by("metric_version__metric__slug")
    metrics = []
    for job in jobs:
        ahead = 0
        if not job.is_final:
            first = job.batches.filter(status=JobBatch.Status.QUEUED).order_by("enqueued_at").first()
            if first is not None and first.enqueued_at is not None:
                ahead = JobBatch.objects.filter(
                    status=JobBatch.Status.QUEUED,
                    enqueued_at__lt=first.enqueued_at,
                    job__metric_version__metric__queue=job.metric_version.metric.queue,
                ).count()
        metrics.append(
            {
                "metric": job.metric_version.metric.slug,
                "name": job.metric_version.metric.name,
                "status": job.status,
                "done": job.done,
                "total": job.total,
                "failed": job.failed,
                "error": job_problem(job, detail=detail),
                "batches_ahead": ahead,
                "seconds": round(job.compute_seconds, 2),
            }
        )
    return {
        "submission": submission.pk,
        "status": submission.status,
        # Its jobs' errors joined (submission_refresh): the server's detail, for staff; anyone else
        # reads each metric's plain words above.
        "error": submission.error if detail else "",
        "captions": submission.caption_count,
        "metrics": metrics,
        "final": submission.status not in Submission.ACTIVE,
    }


def job_problem(job: EvaluationJob, *, detail: bool) -> str:
    """What went wrong with a scoring job: its own error for staff (`detail`), plain words for
    anyone else; empty when nothing did."""
    if job.status not in (EvaluationJob.Status.FAILED, EvaluationJob.Status.UNAVAILABLE) and not job.error:
        return ""
    return job.error if detail else PLAIN_WORDS.get(job.status, "")
