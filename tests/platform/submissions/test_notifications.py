"""The e-mail a submission's owner gets when its scoring is over: once per outcome however often
the code that settles the status runs, after the transaction commits, never for a withdrawn
submission or an owner without an address, and never at the cost of the status change when the
mail server fails."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core import mail
from django.db import connections, transaction

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from catalog.uploads.services import upload_withdraw
from scoring.models import EvaluationJob
from scoring.services.finalize import job_finalize
from scoring.services.lifecycle import job_end
from submissions.models import Submission
from submissions.notifications import outcome_notice_claim
from submissions.services import SUBMISSIONS, submission_refresh
from submissions.sweep import submissions_sweep
from tests.platform.factories import UserFactory
from tests.platform.scoring.inline import run_jobs, submit_planned

pytestmark = pytest.mark.django_db(transaction=True)
SITE = "https://capbench.example"


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = SITE
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 20


@pytest.fixture
def owner():
    return UserFactory(username="owner", email="owner@example.org")


def jobs_of(submission: Submission, slug: str):
    return EvaluationJob.objects.filter(system=submission.system, metric_version__metric__slug=slug)


def settle_again(submission: Submission) -> None:
    """Every way the final status is settled, once more: the job's finalisation and end, the
    submission's refresh and the periodic sweep (submissions.sweep)."""
    for job in submission.jobs():
        job_finalize(job_id=job.pk)
        job_end(job_id=job.pk, status=EvaluationJob.Status.DONE)
    submission_refresh(submission_id=submission.pk)
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.RUNNING)  # as if never settled
    assert submissions_sweep()["settled"] == 1
    submission_refresh(submission_id=submission.pk)


def test_a_finished_submission_mails_its_owner_once(demo_dataset, owner):
    # a line separator: no control character (those are refused), yet a line break in a header
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"], name="Word \u2028counter  v2")
    assert mail.outbox == []
    run_jobs(submission.jobs())
    submission.refresh_from_db()
    assert submission.status == "done" and submission.notified_status == "done" and submission.notified_at
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["owner@example.org"]
    assert message.subject == 'CapBench: "Word counter v2" on Demo is scored'
    assert f"{SITE}/submissions/{submission.pk}/" in message.body
    assert "has finished" in message.body
    assert "Status: finished" in message.body
    assert '"Word \u2028counter  v2" on Demo' in message.body  # the name as given, unescaped

    settle_again(submission)
    assert Submission.objects.get(pk=submission.pk).status == "done"
    assert len(mail.outbox) == 1


def test_a_failed_submission_mails_its_owner_once(demo_dataset, owner):
    submission = submit_planned(owner, demo_dataset, metrics=["test_words", "test_broken"], name="Half broken")
    run_jobs(jobs_of(submission, "test_words"))
    assert mail.outbox == []  # one job is still open
    broken = jobs_of(submission, "test_broken").get()
    job_end(job_id=broken.pk, status=EvaluationJob.Status.FAILED, error="boom")
    assert Submission.objects.get(pk=submission.pk).status == "failed"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.subject == 'CapBench: "Half broken" on Demo failed'
    assert "has failed" in message.body
    assert f"{SITE}/submissions/{submission.pk}/" in message.body
    assert "boom" not in message.body  # the reason is on the page, for whoever may see it

    job_end(job_id=broken.pk, status=EvaluationJob.Status.FAILED, error="boom again")
    submission_refresh(submission_id=submission.pk)
    submission_refresh(submission_id=submission.pk)
    assert len(mail.outbox) == 1


def test_an_outcome_reached_again_is_not_announced_again_but_a_different_one_is(demo_dataset, owner):
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    run_jobs(submission.jobs())
    assert len(mail.outbox) == 1
    # A re-scoring takes it through "running" and back to "finished": nothing new to say.
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.RUNNING)
    assert submission_refresh(submission_id=submission.pk).status == "done"
    assert len(mail.outbox) == 1
    # An owner told of a failure whose submission then finishes is told that too.
    Submission.objects.filter(pk=submission.pk).update(status="running", notified_status="failed")
    assert submission_refresh(submission_id=submission.pk).status == "done"
    assert len(mail.outbox) == 2 and "has finished" in mail.outbox[1].body


def test_claims_racing_for_one_outcome_send_one_mail(demo_dataset, owner):
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.DONE)
    count = 8
    start = threading.Barrier(count)

    def claim(_):
        start.wait()
        try:
            return outcome_notice_claim(submission_id=submission.pk, status=Submission.Status.DONE)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(count) as pool:
        claimed = list(pool.map(claim, range(count)))
    assert claimed.count(True) == 1
    assert len(mail.outbox) == 1


def test_a_rolled_back_outcome_announces_nothing(demo_dataset, owner):
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    with pytest.raises(RuntimeError), transaction.atomic():
        Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.DONE)
        assert outcome_notice_claim(submission_id=submission.pk, status=Submission.Status.DONE)
        assert mail.outbox == []  # not before the commit
        raise RuntimeError("the transaction fails after the claim")
    assert mail.outbox == []
    assert Submission.objects.get(pk=submission.pk).notified_status == ""


def test_a_withdrawn_submission_gets_no_mail(demo_dataset, owner):
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    upload_withdraw(upload=submission, kind=SUBMISSIONS)
    for job in submission.jobs():
        job_end(job_id=job.pk, status=EvaluationJob.Status.DONE)
    submission_refresh(submission_id=submission.pk)
    assert submissions_sweep()["settled"] == 0
    assert not outcome_notice_claim(submission_id=submission.pk, status=Submission.Status.DONE)
    assert not outcome_notice_claim(submission_id=submission.pk, status=Submission.Status.WITHDRAWN)
    assert Submission.objects.get(pk=submission.pk).status == "withdrawn"
    assert mail.outbox == []


def test_an_owner_without_an_address_gets_no_mail(demo_dataset, django_user_model):
    owner = UserFactory(username="quiet")
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    run_jobs(submission.jobs())
    assert Submission.objects.get(pk=submission.pk).status == "done"
    assert mail.outbox == []


def test_a_failing_mail_server_does_not_stop_the_status_change(demo_dataset, owner, settings, caplog):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 1, 2  # nothing listens
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    submission = submit_planned(owner, demo_dataset, metrics=["test_words"])
    with caplog.at_level(logging.ERROR, logger="submissions.notifications"):
        run_jobs(submission.jobs())
    submission.refresh_from_db()
    assert submission.status == "done"
    assert submission.finished_at is not None
    assert all(job.status == "done" for job in submission.jobs())
    failures = [r for r in caplog.records if r.name == "submissions.notifications"]
    assert len(failures) == 1 and "was not sent" in failures[0].getMessage() and failures[0].exc_info
