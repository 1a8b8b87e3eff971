"""Creating submissions: one transaction for a valid file, nothing stored for a bad one, quotas,
and a broker outage that leaves the submission queued for the reaper."""

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.utils import timezone

from capbench.celery import app
from catalog.models import Caption, Item, System
from catalog.uploads.services import upload_withdraw
from submissions.formats import SubmissionFileError
from submissions.models import Submission
from submissions.services import (
    SUBMISSIONS,
    MethodInfo,
    QuotaExceeded,
    SubmissionRefused,
    submission_create,
    submissions_dispatch_pending,
)

pytestmark = pytest.mark.django_db(transaction=True)
METHOD = MethodInfo("Show and Tell", "an LSTM captioner", "https://arxiv.org/abs/1411.4555", "https://github.com/x/y")


def results(dataset, caption=lambda item: f"a photo of item {item.pk}") -> list[dict]:
    return [{"image_id": item.external_id, "caption": caption(item)} for item in Item.objects.filter(dataset=dataset)]


def version(number: int):
    return lambda item: f"a photo of item {item.pk}, take {number}"


def create(owner, dataset, entries, name="results.json", **extra):
    return submission_create(
        owner=owner,
        dataset=dataset,
        file_name=name,
        content=json.dumps(entries).encode(),
        method=METHOD,
        metrics=["rouge_l"],
        **extra,
    )


def stored_counts() -> tuple[int, int, int]:
    return (
        Submission.objects.count(),
        System.objects.filter(kind="submission").count(),
        Caption.objects.filter(system__kind="submission").count(),
    )


def test_a_valid_file_becomes_system_captions_and_submission(demo_dataset, captioner):
    submission = create(captioner, demo_dataset, results(demo_dataset))
    assert stored_counts() == (1, 1, 100)
    assert submission.status == "queued"
    assert submission.caption_count == 100
    assert submission.system.kind == "submission"
    assert submission.system.name == "Show and Tell"
    assert submission.paper_url == METHOD.paper_url
    assert submission.metrics == ["rouge_l"]
    upload = Path(settings.MEDIA_ROOT) / submission.stored_file
    assert json.loads(upload.read_bytes()) == results(demo_dataset)  # the upload as received is kept
    submission.refresh_from_db()
    assert submission.dispatched_at is not None  # the planning task reached the real broker


def test_the_file_is_kept_before_the_transaction_and_removed_when_the_transaction_fails(
    demo_dataset, captioner, monkeypatch
):
    """The upload reaches the store before the owner's row is locked (a slow bucket holds no lock);
    a failure inside the transaction stores no rows and leaves no file."""
    import submissions.services as services

    seen = {}
    keep = services.StagedUpload.keep

    def keep_outside_a_transaction(staged, file_format):
        from django.db import connection

        seen["in_transaction"] = connection.in_atomic_block
        seen["name"] = keep(staged, file_format)
        return seen["name"]

    def fail(name):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services.StagedUpload, "keep", keep_outside_a_transaction)
    monkeypatch.setattr(services, "_system_slug", fail)
    with pytest.raises(RuntimeError):
        create(captioner, demo_dataset, results(demo_dataset))
    assert seen["in_transaction"] is False
    assert stored_counts() == (0, 0, 0)
    assert not (Path(settings.MEDIA_ROOT) / seen["name"]).exists()


def test_unknown_duplicate_and_missing_ids_are_all_reported_and_nothing_is_stored(demo_dataset, captioner):
    entries = results(demo_dataset)
    first_id = entries[0]["image_id"]
    entries = entries[:90] + [{"image_id": "no-such-image.jpg", "caption": "x"}, {"image_id": first_id, "caption": "y"}]
    with pytest.raises(SubmissionFileError) as caught:
        create(captioner, demo_dataset, entries)
    found = caught.value.problems
    assert found[0].startswith("entry 91, field 'image_id': 'no-such-image.jpg' is not an image of dataset 'demo'")
    assert found[1] == (
        f"entry 92, field 'image_id': {first_id!r} again (first at entry 1); give exactly one caption per image"
    )
    assert found[2].startswith("10 of the dataset's 100 images have no caption (e.g. ")
    assert stored_counts() == (0, 0, 0)


def test_size_and_caption_length_limits_come_from_settings(demo_dataset, captioner, settings):
    settings.CAPBENCH_CAPTION_MAX_CHARS = 10
    with pytest.raises(
        SubmissionFileError, match=r"entr(y|ies) \(?1\b.*field 'caption': \d+ characters, more than the limit of 10"
    ):
        create(captioner, demo_dataset, results(demo_dataset))
    settings.CAPBENCH_SUBMISSION_MAX_BYTES = 1000
    with pytest.raises(SubmissionFileError, match="results.json: .* bytes, more than the limit of 1,000"):
        create(captioner, demo_dataset, results(demo_dataset))
    assert stored_counts() == (0, 0, 0)


def test_method_metadata_is_checked(demo_dataset, captioner):
    with pytest.raises(SubmissionRefused, match="field 'paper URL': must start with https://"):
        submission_create(
            owner=captioner,
            dataset=demo_dataset,
            file_name="r.json",
            content=b"[]",
            method=MethodInfo("x", paper_url="javascript:alert(1)"),
        )
    with pytest.raises(SubmissionRefused, match="field 'method name': required"):
        submission_create(
            owner=captioner, dataset=demo_dataset, file_name="r.json", content=b"[]", method=MethodInfo("  ")
        )


def test_control_characters_in_the_method_and_the_file_name_are_refused_and_nothing_stored(demo_dataset, captioner):
    """Other people print a method's name in their terminal (`capbench board`): `ESC ]0;…` sets its
    title. C0, DEL and C1 controls are refused in the name, the URLs and the file's name (all shown
    with the submission); a description keeps its line breaks and tabs, not other controls."""
    entries = results(demo_dataset)
    for method, name, message in (
        (
            MethodInfo("Evil\x1b]0;owned\x07"),
            "r.json",
            r"field 'method name': contains a control character \(U\+001B at character 5\)",
        ),
        (MethodInfo("Two\nlines"), "r.json", r"field 'method name': .*U\+000A"),
        (MethodInfo("M", "fine\r\nthen\x9b2J"), "r.json", r"field 'description': .*U\+009B at character 11"),
        (MethodInfo("M", "", "", "https://e.org/\x7f"), "r.json", r"field 'code URL': .*U\+007F"),
        (METHOD, "r\x1b[2J.json", r"field 'file name' \('r\\x1b\[2J.json'\): .*U\+001B"),
    ):
        with pytest.raises(SubmissionRefused, match=message):
            submission_create(
                owner=captioner,
                dataset=demo_dataset,
                file_name=name,
                content=json.dumps(entries).encode(),
                method=method,
            )
    assert stored_counts() == (0, 0, 0)
    kept = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Plain", "Two lines,\r\nand\ta tab"),
    )
    assert kept.description == "Two lines,\r\nand\ta tab"


def test_daily_quota_says_when_the_next_submission_is_allowed(demo_dataset, captioner, settings):
    settings.CAPBENCH_SUBMISSIONS_PER_DAY, settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 2, 10
    first = create(captioner, demo_dataset, results(demo_dataset, version(1)))
    create(captioner, demo_dataset, results(demo_dataset, version(2)))
    with pytest.raises(QuotaExceeded) as caught:
        create(captioner, demo_dataset, results(demo_dataset, version(3)))
    assert caught.value.retry_at == first.created_at + timedelta(days=1)
    assert f"the next one is allowed at {caught.value.retry_at:%Y-%m-%d %H:%M} UTC" in str(caught.value)
    Submission.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(days=1, minutes=1))
    create(captioner, demo_dataset, results(demo_dataset, version(3)))  # a day later the slot is free again
    assert Submission.objects.count() == 3


def test_concurrent_quota_counts_unfinished_submissions(demo_dataset, captioner, settings):
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 1
    first = create(captioner, demo_dataset, results(demo_dataset))
    with pytest.raises(QuotaExceeded, match="1 of your submissions are still being scored"):
        create(captioner, demo_dataset, results(demo_dataset, version(2)))
    upload_withdraw(upload=first, kind=SUBMISSIONS)
    assert Submission.objects.get(pk=first.pk).status == "withdrawn"
    create(captioner, demo_dataset, results(demo_dataset))  # the withdrawn one is no duplicate


@pytest.fixture
def broker_down():
    """The web process's broker points at a port nothing listens on (a Redis outage)."""
    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    app._pool = app.amqp._producer_pool = None  # the next publish connects to the dead URL
    yield
    app.conf.broker_url, app._pool, app.amqp._producer_pool = saved


def test_a_broker_outage_during_upload_leaves_the_submission_queued_and_the_sweep_cannot_send_it_yet(
    demo_dataset, captioner, broker_down
):
    submission = create(captioner, demo_dataset, results(demo_dataset))
    submission.refresh_from_db()
    assert submission.status == "queued"
    assert submission.dispatched_at is None
    assert stored_counts() == (1, 1, 100)  # nothing lost
    assert submissions_dispatch_pending(older_than=timedelta(0)) == 0


def test_pending_submissions_are_sent_once_the_broker_is_back(demo_dataset, captioner):
    submission = create(captioner, demo_dataset, results(demo_dataset))
    Submission.objects.filter(pk=submission.pk).update(dispatched_at=None)  # as if the outage had eaten it
    assert submissions_dispatch_pending(older_than=timedelta(0)) == 1
    assert Submission.objects.get(pk=submission.pk).dispatched_at is not None
    assert submissions_dispatch_pending(older_than=timedelta(0)) == 0  # sent: not again
    # Dispatched long ago and still without a single job: the planning message was lost.
    Submission.objects.filter(pk=submission.pk).update(dispatched_at=timezone.now() - timedelta(hours=1))
    assert submissions_dispatch_pending(older_than=timedelta(0)) == 1
