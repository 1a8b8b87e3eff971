"""A submission's status follows its scoring jobs (scoring.events); connected in SubmissionsConfig.ready."""

from __future__ import annotations

from django.dispatch import receiver

from scoring.events import job_ended, job_running, jobs_swept
from submissions.services import submission_refresh, submission_started, submissions_settle


@receiver(job_running)
def mark_running(sender, submission_id: int | None, started_at, **_) -> None:
    if submission_id:
        submission_started(submission_id=submission_id, started_at=started_at)


@receiver(job_ended)
def refresh_status(sender, submission_id: int | None = None, **_) -> None:
    if submission_id:
        submission_refresh(submission_id=submission_id)


@receiver(jobs_swept)
def settle_submissions(sender, each, **_) -> None:
    submissions_settle(each=each)
