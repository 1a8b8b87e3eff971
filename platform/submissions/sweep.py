"""The periodic sweep (submissions.tasks.reap, `manage.py sweep`): scoring's recovery
(scoring.services.reaper.jobs_recover), then the submissions it leaves settled, then scoring's
re-scoring (results_refresh: new jobs would keep a settled-to-be submission open), then the plans
that never reached the broker. Scoring returns its tallies and knows nothing of submissions: the
order is this module's."""

from __future__ import annotations

import logging

from django.db.models import Exists, OuterRef

from scoring.services.reaper import jobs_recover, results_refresh, sweep_lock
from submissions.models import Submission
from submissions.services import submission_refresh, submissions_dispatch_pending

log = logging.getLogger(__name__)


def submissions_sweep() -> dict[str, int]:
    """Scoring's sweep and its tally, with "settled" (`submissions_settle`, between recovery and
    re-scoring) and "dispatched": submissions whose plan never reached the broker are sent again."""
    with sweep_lock() as held:
        if not held:  # another sweep holds the reaper's lock: its task settles
            counts = {"skipped": 1}
        else:
            counts = jobs_recover()
            counts["settled"], errors = submissions_settle()
            counts["errors"] += errors
            for key, value in results_refresh().items():
                counts[key] = counts.get(key, 0) + value
    counts["dispatched"] = submissions_dispatch_pending()
    return counts


def submissions_settle() -> tuple[int, int]:
    """Submissions still active whose jobs are all over get their final status (one whose
    `job_ended` was lost: a crash after the commit, a receiver's error). Returns how many are over
    now and how many failed; one submission's error is logged and skips it only."""
    jobs = Submission.jobs_of(OuterRef("system_id"))
    active = Submission.objects.filter(status__in=Submission.ACTIVE).filter(Exists(jobs), ~Exists(jobs.open()))
    settled = errors = 0
    for pk in list(active.values_list("pk", flat=True)):
        try:
            settled += int(submission_refresh(submission_id=pk).status not in Submission.ACTIVE)
        except Exception:
            errors += 1
            log.exception("sweep: could not settle submission %s", pk)
    return settled, errors
