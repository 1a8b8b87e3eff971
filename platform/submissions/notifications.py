"""An e-mail to a submission's owner when its scoring is over: finished, or failed (docs/email.md).

The code that settles a submission's status can run more than once for one outcome (a job's end and
the reaper's sweep, a task delivered twice), and a status can be reached again (a re-scoring under
a new metric version takes a finished submission through "running" back to "finished"). The owner
is told of each outcome once: `outcome_notice_claim` records it in `notified_status` with a single
conditional UPDATE (`… WHERE status = %s AND notified_status <> %s`), which PostgreSQL evaluates
again on the locked row, so of two concurrent claims exactly one changes a row, and only that one
sends. A re-scoring that ends as before sends nothing; a failed submission that is scored again and
finishes is told so.

The message leaves after the claiming transaction commits (a rolled-back status announces
nothing). Mail is a courtesy: a backend that fails is logged and never fails the status change or
the scoring task. Withdrawn submissions and owners without an address get none.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.mail import EmailMessage
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from submissions.models import Submission

log = logging.getLogger(__name__)
OUTCOMES = frozenset({Submission.Status.DONE, Submission.Status.FAILED})
SUBJECT_NAME_CHARS = 80


def outcome_notice_claim(*, submission_id: int, status: str) -> bool:
    """Claim the e-mail for the submission's outcome `status` (done or failed) unless its owner was
    told of that one already; a claimed one is sent after the current transaction commits."""
    if status not in OUTCOMES:
        return False
    claimed = (
        Submission.objects.filter(pk=submission_id, status=status)
        .exclude(notified_status=status)
        .update(notified_status=status, notified_at=timezone.now())
    )
    if claimed:
        transaction.on_commit(lambda: outcome_notice_send(submission_id=submission_id, status=status), robust=True)
    return bool(claimed)


def outcome_notice_send(*, submission_id: int, status: str) -> bool:
    """Send the claimed e-mail now: False (and logged, where something failed) when none was sent."""
    try:
        submission = Submission.objects.select_related("owner", "dataset").get(pk=submission_id)
        if submission.status != status or not submission.owner.email:
            return False  # withdrawn or scored again since the claim; or nowhere to write to
        outcome_message(submission).send()
    except Exception:
        log.exception("submission %s: the e-mail saying it is %s was not sent", submission_id, status)
        return False
    log.info("submission %s: its owner was told by e-mail that it is %s", submission_id, status)
    return True


def outcome_message(submission: Submission) -> EmailMessage:
    context = {
        "submission": submission,
        "name": submission.method_name,
        "dataset": submission.dataset.title,
        "status": submission.get_status_display(),
        "finished": submission.status == Submission.Status.DONE,
        "link": submission_link(submission.pk),
    }
    short = dict(context, name=_shortened(submission.method_name, SUBJECT_NAME_CHARS))
    subject = " ".join(render_to_string("emails/submission_outcome_subject.txt", short).split())
    body = render_to_string("emails/submission_outcome.txt", context)
    return EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [submission.owner.email])


def submission_link(submission_id: int) -> str:
    """The submission's page as an absolute address (SITE_URL: a worker has no request to ask)."""
    return settings.SITE_URL + reverse("submissions:detail", args=[submission_id])


def _shortened(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
