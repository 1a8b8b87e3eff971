"""A submission's status follows its scoring jobs (scoring.events), which name only the system: the
services here find the submission that brought it. Connected in SubmissionsConfig.ready."""

from __future__ import annotations

from django.dispatch import receiver

from scoring.events import job_ended, job_running
from submissions.services import submission_job_ended, submission_started


@receiver(job_running)
def mark_running(sender, system_id: int | None, started_at, **_) -> None:
    if system_id:
        submission_started(system_id=system_id, started_at=started_at)


@receiver(job_ended)
def refresh_status(sender, system_id: int | None = None, **_) -> None:
    if system_id:
        submission_job_ended(system_id=system_id)
