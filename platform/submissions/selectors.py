"""Reads of submissions for pages and the API."""

from __future__ import annotations

from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from catalog.models import Caption
from catalog.selectors import any_blind
from scoring.models import EvaluationJob, JobBatch
from scoring.selectors import CaptionScores, ScoreColumn, caption_scores
from scoring.wording import not_computed_here, unavailable_words
from submissions.cards import PLAIN_WORDS, job_state
from submissions.models import Submission


def submissions_of(*, owner) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=owner).select_related("dataset", "system")


def submission_shown(*, pk: int, viewer) -> Submission:
    """The submission if `viewer` may see it (catalog.visibility), else 404 — the same answer as for
    an id that does not exist, so ids of private submissions are not confirmed."""
    return get_object_or_404(Submission.objects.visible_to(viewer).select_related("dataset", "system", "owner"), pk=pk)


def submission_progress(*, submission: Submission, detail: bool = False) -> dict:
    """Per metric computed here: state, done/total, what went wrong in plain words (`detail`, for
    staff: the job's own error, which may name paths and settings of the server), and how many
    batches wait ahead; `done` and `total` summed over them. The metrics this server does not
    compute are listed apart (`unavailable`, with `not_computed_here` the page's one line): they
    are never queued and count in no total."""
    jobs = submission.jobs().select_related("metric_version__metric").order_by("metric_version__metric__slug")
    metrics, unavailable = [], []
    for job in jobs:
        metric = job.metric_version.metric
        if job_state(job, metric) == EvaluationJob.Status.UNAVAILABLE:
            unavailable.append(
                {
                    "metric": metric.slug,
                    "name": metric.name,
                    "words": unavailable_words(metric.needs),
                    "needs": metric.needs,
                }
            )
            continue
        metrics.append(
            {
                "metric": metric.slug,
                "name": metric.name,
                "status": job.status,
                "done": job.done,
                "total": job.total,
                "failed": job.failed,
                "error": job_problem(job, detail=detail),
                "batches_ahead": _batches_ahead(job),
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
        "done": sum(line["done"] for line in metrics),
        "total": sum(line["total"] for line in metrics),
        "metrics": metrics,
        "unavailable": [{key: line[key] for key in ("metric", "name", "words")} for line in unavailable],
        "not_computed_here": not_computed_here((line["name"], line["needs"]) for line in unavailable),
        "final": submission.status not in Submission.ACTIVE,
    }


def _batches_ahead(job: EvaluationJob) -> int:
    """Batches of the same queue sent before the job's first waiting one."""
    if job.is_final:
        return 0
    first = job.batches.filter(status=JobBatch.Status.QUEUED).order_by("enqueued_at").first()
    if first is None or first.enqueued_at is None:
        return 0
    return JobBatch.objects.filter(
        status=JobBatch.Status.QUEUED,
        enqueued_at__lt=first.enqueued_at,
        job__metric_version__metric__queue=job.metric_version.metric.queue,
        job__metric_version__metric__available=True,  # (a job planned before planning skipped those)
    ).count()


def job_problem(job: EvaluationJob, *, detail: bool) -> str:
    """What went wrong with a scoring job: its own error for staff (`detail`), plain words for
    anyone else; empty when nothing did."""
    if job.status not in (EvaluationJob.Status.FAILED, EvaluationJob.Status.UNAVAILABLE) and not job.error:
        return ""
    return job.error if detail else PLAIN_WORDS.get(job.status, "")


SCORE_ROWS = 100  # captions per page of the submission's scores


@dataclass
class ScoreTable:
    """A page of the submission's per-caption scores: one row per caption, one column per metric."""

    page: Page
    columns: list[ScoreColumn]
    rows: list[CaptionScores]
    blind: bool = False  # an open campaign rates its captions: none is listed to this viewer (catalog.visibility)


def score_page(*, submission: Submission, viewer, metric: str | None, number) -> ScoreTable:
    """A page of the submission's captions in upload order (found by the caption_system_order
    index) with their scores the viewer may read as columns (scoring.selectors.caption_scores),
    `metric`'s only if given. Cost per page stays flat however many scores the submission has
    (docs/performance.md)."""
    # Read one by one: none while an open campaign rates them, but for their owner and staff (catalog.visibility).
    captions = (
        Caption.objects.listed_to(viewer).filter(system=submission.system).order_by("id").values_list("pk", flat=True)
    )
    page = Paginator(captions, SCORE_ROWS).get_page(number)
    columns, rows = caption_scores(caption_ids=list(page.object_list), viewer=viewer, metric=metric)
    return ScoreTable(page, columns, rows, blind=any_blind(systems=[submission.system], viewer=viewer))
