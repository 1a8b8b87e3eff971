"""Reads of submissions for pages and the API."""

from __future__ import annotations

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from catalog.models import Caption
from scoring.models import EvaluationJob, JobBatch, Score
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


SCORE_ROWS = 100  # per page of the submission's scores


def score_page(*, submission: Submission, viewer, metric: str | None, number) -> tuple[Page, list[Score]]:
    """A page of the submission's per-caption scores the viewer may read, `metric`'s only if given:
    pages are of captions in upload order (100 with a metric, 4 with all 25 metrics: about 100
    rows), found by the caption_system_order index, then their scores from score_unique. Cost per
    page stays flat however many scores the submission has (docs/performance.md); row-offset paging
    of 125,000 scores took most of a second at its last pages."""
    captions = Caption.objects.filter(system=submission.system).order_by("id").values_list("pk", flat=True)
    metrics = (
        1
        if metric
        else EvaluationJob.objects.filter(system=submission.system).values("metric_version__metric").distinct().count()
    )
    page = Paginator(captions, max(1, SCORE_ROWS // max(1, metrics))).get_page(number)
    # On a hidden test set, reference-based metrics' per-caption scores are withheld (catalog.visibility).
    scores = (
        Score.objects.visible_to(viewer)
        .filter(caption_id__in=list(page.object_list))
        .select_related("caption__item", "metric_version__metric")
        .order_by("caption_id", "metric_version__metric__slug")
    )
    if metric:
        scores = scores.filter(metric_version__metric__slug=metric)
    return page, list(scores)
