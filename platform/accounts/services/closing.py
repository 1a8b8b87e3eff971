"""Deleting an account (docs/security.md, "Your data"). In one transaction:

- private work goes: every submission that is private or withdrawn (its system, captions, scores,
  jobs and uploaded file) and every submitted metric that is (its versions, scores, correlations and
  files);
- public work goes too, or stays anonymised, as the person chooses (`keep_public`): kept, a public
  submission or metric is handed to the "anonymous author" account, so the boards, its page and the
  API name that instead of the person, and its scores and numbers stay as they are; removed, it
  leaves the boards like a withdrawn one;
- answers in live human evaluation go: each task, and each judgment filed under the campaign's
  pseudonym for the person; every campaign touched computes its results again. (Kept, they would
  need an annotator standing for the person, which is an account by another name; campaigns count
  annotators, their agreement and their gold checks per person, so they cannot be pooled.)
- the account goes, and with it its API token, two-factor device, invitations and address digests.

Citable snapshots keep their frozen numbers and ranks either way (docs/citing.md): a removed
system shows there as withdrawn, a kept one under the anonymous author. The boards are rebuilt,
significance clusters computed again, stored files deleted and a notice mailed once the
transaction has committed.

Staff accounts are closed by other staff in the admin, not here (they may own campaigns, which
keep their organiser)."""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.db import transaction

from accounts.services.mail import notice_after_commit
from campaigns.models import Annotation, Campaign
from campaigns.services.identity import pseudonym
from campaigns.services.refresh import refresh_soon
from catalog.models import Dataset, Judgment, System
from plumbing import storage
from plumbing.errors import ApplicationError
from scoring.models import Metric
from scoring.services.correlations import dataset_significance
from scoring.services.lifecycle import jobs_cancel
from submissions.events import submission_changed
from submissions.models import Submission
from workbench.models import MetricSubmission, UploadedFile

log = logging.getLogger(__name__)
ANONYMOUS_AUTHOR = "anonymous author"  # a space: no sign-up can take this user name (letters, digits, . + - _ @)


class ClosingRefused(ApplicationError, ValueError):
    """403: the account cannot be deleted here; the message says why and what to do."""

    status = 403


@dataclass
class Closed:
    """What the deletion did, in counts (the notice and the page say them)."""

    submissions_removed: int = 0
    submissions_kept: int = 0
    metrics_removed: int = 0
    metrics_kept: int = 0
    answers_removed: int = 0
    files: list[str] = field(default_factory=list)


def anonymous_author() -> User:
    """The account that kept public work is handed to: never active, no password, no e-mail."""
    user, _ = User.objects.get_or_create(
        username=ANONYMOUS_AUTHOR, defaults={"is_active": False, "password": make_password(None)}
    )
    return user


def account_delete(*, user: User, keep_public: bool) -> Closed:
    """Delete `user` and their work as the module says; ClosingRefused for a staff account or one
    that organised a campaign."""
    if user.is_staff or user.is_superuser:
        raise ClosingRefused("Staff accounts are closed by another member of staff, in the admin.")
    if Campaign.objects.filter(created_by=user).exists():
        raise ClosingRefused("You organised a live human evaluation campaign: ask staff to close your account.")
    closed = Closed()
    boards: set[int] = set()  # datasets whose boards change
    clusters: set[int] = set()  # datasets whose significance clusters change
    email, username, user_id = user.email, user.get_username(), user.pk
    with transaction.atomic():
        User.objects.select_for_update().filter(pk=user.pk).first()  # one deletion at a time
        heir = anonymous_author()
        for submission in Submission.objects.filter(owner=user).order_by("pk"):
            boards.add(submission.dataset_id)
            if keep_public and submission.is_public and not submission.is_withdrawn:
                Submission.objects.filter(pk=submission.pk).update(owner=heir)
                closed.submissions_kept += 1
                continue
            jobs_cancel(system_id=submission.system_id, reason="its author deleted their account")
            System.objects.filter(pk=submission.system_id).delete()  # the submission, captions, scores, jobs
            closed.files.append(submission.stored_file)
            closed.submissions_removed += 1
        for metric in MetricSubmission.objects.filter(owner=user).order_by("pk"):
            datasets = set(UploadedFile.objects.filter(upload__submission=metric).values_list("dataset_id", flat=True))
            if keep_public and metric.is_public and metric.status == MetricSubmission.Status.ACTIVE:
                MetricSubmission.objects.filter(pk=metric.pk).update(owner=heir)
                closed.metrics_kept += 1
                continue
            clusters |= datasets
            closed.files += list(
                UploadedFile.objects.filter(upload__submission=metric).values_list("stored_file", flat=True)
            )
            Metric.objects.filter(pk=metric.metric_id).delete()  # its versions, scores, correlations, uploads
            closed.metrics_removed += 1
        closed.answers_removed = _answers_remove(user)
        user.delete()
        transaction.on_commit(lambda: _after(boards, clusters, closed.files))
        notice_after_commit(
            to=email,
            template="account_deleted",
            context={"username": username, "closed": closed, "keep_public": keep_public},
        )
    log.info(
        "account %s deleted: %s submissions and %s metrics removed, %s and %s kept anonymised, %s answers removed",
        user_id,
        closed.submissions_removed,
        closed.metrics_removed,
        closed.submissions_kept,
        closed.metrics_kept,
        closed.answers_removed,
    )
    return closed


def _answers_remove(user: User) -> int:
    """The person's tasks and the judgments filed under their pseudonym, campaign by campaign; each
    campaign touched computes its results again."""
    by_campaign: dict[int, int] = defaultdict(int)
    for campaign_id in Annotation.objects.filter(annotator=user).values_list("campaign_id", flat=True):
        by_campaign[campaign_id] += 1
    for campaign in Campaign.objects.filter(pk__in=by_campaign):
        Judgment.collected.filter(source=campaign.source, annotator=pseudonym(campaign, user.pk)).delete()
        Annotation.objects.filter(campaign=campaign, annotator=user).delete()
        refresh_soon(campaign)
    return sum(by_campaign.values())


def _after(boards: set[int], clusters: set[int], files: list[str]) -> None:
    """Once committed: the boards rebuilt (submissions' own event, as a withdrawal sends it), the
    clusters computed again, the removed work's stored files deleted."""
    for dataset_id in sorted(boards):
        submission_changed.send(sender=Submission, dataset_id=dataset_id)
    for dataset in Dataset.objects.filter(pk__in=clusters).order_by("pk"):
        try:
            dataset_significance(dataset=dataset)
        except Exception:  # the clusters come again with the next upload or sweep; the deletion stands
            log.exception("dataset %s: significance clusters not computed after an account deletion", dataset.pk)
    for name in files:
        try:
            storage.delete(name)
        except Exception:  # a file the store cannot delete now is an orphan, never a row without its file
            log.exception("stored file %s not deleted after an account deletion", name)
