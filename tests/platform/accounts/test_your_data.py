"""Your data, your choice: a signed-in person downloads everything CapBench holds about them as one
zip (every kind of their work in it, nobody else's), and deletes their account, their public work
removed or kept anonymised as they choose. Both need the password, are rate-limited and mailed."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import zipfile
from dataclasses import dataclass

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from rest_framework.authtoken.models import Token

from accounts.services.closing import ANONYMOUS_AUTHOR
from campaigns.models import Annotation, Campaign
from campaigns.rubrics import ACCR
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next
from campaigns.services.identity import pseudonym
from catalog.models import Item, Judgment, System
from catalog.services.candidates import caption_keys
from catalog.uploads.services import upload_withdraw
from leaderboards.citable import snapshot_freeze
from plumbing import storage
from scoring.models import Metric, Score, SystemScore
from submissions.models import Submission
from submissions.services import SUBMISSIONS, MethodInfo, submission_create
from workbench.models import MetricSubmission
from workbench.services import MetricInfo, ScoresFile, metric_submit, upload_correlate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.usefixtures("fresh_page_memory")]
PASSWORD = "ada's long pass phrase"


@dataclass
class World:
    ada: object
    bob: object
    public: Submission
    private: Submission
    withdrawn: Submission
    uploads: dict[int, bytes]  # submission id: the file as uploaded
    public_metric: MetricSubmission
    private_metric: MetricSubmission
    campaign: Campaign


def _results(dataset, marker: str) -> bytes:
    entries = [
        {"image_id": i.external_id, "caption": f"a {marker} dog {i.pk}"} for i in Item.objects.filter(dataset=dataset)
    ]
    return json.dumps(entries).encode()


def _upload(owner, dataset, marker: str, *, public: bool) -> tuple[Submission, bytes]:
    content = _results(dataset, marker)
    method = MethodInfo(f"{marker} captioner", f"{marker} method", f"https://example.org/{marker}")
    submission = submission_create(
        owner=owner, dataset=dataset, file_name=f"{marker}.json", content=content, method=method, is_public=public
    )
    return submission, content


def _metric(owner, dataset, marker: str, *, public: bool) -> MetricSubmission:
    human = dict(Judgment.objects.filter(caption__item__dataset=dataset).values_list("caption_id", "value"))
    lines = [
        json.dumps({"caption_id": key, "score": human.get(pk, 0) + pk % 3}) for key, pk in caption_keys(dataset).items()
    ]
    upload = metric_submit(
        owner=owner,
        info=MetricInfo(f"{marker} metric", f"{marker} metric description"),
        files=[ScoresFile(dataset, f"{marker}.jsonl", "\n".join(lines).encode())],
        is_public=public,
    )
    upload_correlate(upload_id=upload.pk)
    return upload.submission


@pytest.fixture
def world(demo_dataset, django_user_model, scored_submission, store_pictures, settings, tmp_path) -> World:
    settings.MEDIA_ROOT = tmp_path / "media"
    store_pictures(demo_dataset)
    ada = django_user_model.objects.create_user("ada", "ada@example.org", PASSWORD)
    bob = django_user_model.objects.create_user("bob", "bob@example.org", "bob's long pass phrase")
    public = scored_submission(ada, demo_dataset, ["rouge_l"], method="adapubmark captioner")
    uploads = {public.pk: storage.open_stored(public.stored_file).read()}
    private, uploads_private = _upload(ada, demo_dataset, "adaprivmark", public=False)
    withdrawn, uploads_withdrawn = _upload(ada, demo_dataset, "adawithmark", public=True)
    upload_withdraw(upload=withdrawn, kind=SUBMISSIONS)
    uploads |= {private.pk: uploads_private, withdrawn.pk: uploads_withdrawn}
    _upload(bob, demo_dataset, "bobsecretmark", public=False)
    public_metric = _metric(ada, demo_dataset, "adapubmetricmark", public=True)
    private_metric = _metric(ada, demo_dataset, "adaprivmetricmark", public=False)

    staff = django_user_model.objects.create_user("curator", is_staff=True)
    campaign = Campaign.objects.create(
        dataset=demo_dataset,
        slug="ratings",
        title="Ratings",
        rubric=[d.as_json() for d in ACCR],
        gold_rate=0,
        created_by=staff,
    )
    campaign.systems.set(System.objects.filter(dataset=demo_dataset, submission__isnull=True)[:2])
    for turn in range(3):
        for rater in (ada, bob):
            task = task_next(campaign=campaign, annotator=rater)
            annotation_answer(annotation_id=task.pk, annotator=rater, values={d.key: 1 + turn for d in ACCR})
    public.refresh_from_db()
    mail.outbox.clear()  # (the scoring outcome's notice)
    return World(ada, bob, public, private, withdrawn, uploads, public_metric, private_metric, campaign)


def _signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _export(client: Client, password: str = PASSWORD):
    return client.post("/accounts/export/", {"password": password})


def test_the_download_holds_every_kind_of_ones_work_and_nobody_elses(world):
    Token.objects.create(user=world.ada)
    response = _export(_signed_in(world.ada))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith('attachment; filename="capbench-ada-')
    assert "no-store" in response["Cache-Control"]
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = set(archive.namelist())
    manifest = json.loads(archive.read("manifest.json"))

    # The manifest lists every other file, each with its size and digest.
    assert {entry["path"] for entry in manifest["files"]} == names - {"manifest.json"}
    for entry in manifest["files"]:
        data = archive.read(entry["path"])
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"])
    assert b"submission" in archive.read("README.txt")

    account = json.loads(archive.read("account.json"))
    assert (account["username"], account["email"]) == ("ada", "ada@example.org")
    assert account["api_token"]["exists"] is True
    for submission in (world.public, world.private, world.withdrawn):  # public, private and withdrawn
        folder = f"submissions/{submission.pk}"
        assert json.loads(archive.read(f"{folder}/submission.json"))["method_name"] == submission.method_name
        assert archive.read(f"{folder}/upload/{submission.file_name}") == world.uploads[submission.pk]
    public = json.loads(archive.read(f"submissions/{world.public.pk}/submission.json"))
    stored = SystemScore.objects.get(system=world.public.system)
    assert [(n["metric"], n["value"]) for n in public["system_numbers"]] == [("rouge_l", stored.value)]
    rows = list(csv.DictReader(io.StringIO(archive.read(f"submissions/{world.public.pk}/scores.csv").decode())))
    scores = Score.objects.filter(caption__system=world.public.system)
    assert len(rows) == scores.count() == world.public.caption_count
    assert {float(r["value"]) for r in rows} == set(scores.values_list("value", flat=True))
    for metric in (world.public_metric, world.private_metric):
        described = json.loads(archive.read(f"metrics/{metric.pk}/metric.json"))
        assert described["metric"] == metric.metric.slug
        [path] = [f["path"] for u in described["uploads"] for f in u["files"]]
        assert archive.read(path).startswith(b'{"caption_id"')
    answers = json.loads(archive.read("campaigns/answers.json"))
    assert len(answers) == Annotation.objects.filter(annotator=world.ada).count() == 3
    assert {a["pseudonym"] for a in answers} == {pseudonym(world.campaign, world.ada.pk)}
    assert all(a["values"] and a["caption"] for a in answers)

    everything = b"".join(archive.read(name) for name in names)
    assert b"bobsecretmark" not in everything
    assert b"bob" not in everything.lower()
    assert pseudonym(world.campaign, world.bob.pk).encode() not in everything
    assert Token.objects.get(user=world.ada).key.encode() not in everything  # no secret in the archive
    [notice] = mail.outbox
    assert notice.to == ["ada@example.org"]
    assert "downloaded" in notice.subject


def test_a_wrong_password_downloads_nothing(world):
    client = _signed_in(world.ada)
    refused = _export(client, "not my password")
    assert refused.status_code == 200
    assert refused["Content-Type"].startswith("text/html")
    assert "That is not your password." in refused.content.decode()
    assert mail.outbox == []
    assert Client().post("/accounts/export/", {"password": PASSWORD})["Location"].startswith("/accounts/login/")


def test_downloads_and_deletions_are_rate_limited_per_account(fresh_rate_limits, world, settings):
    settings.CAPBENCH_RATES["account_data"] = "2/day"
    client = _signed_in(world.ada)
    codes = [_export(client, "wrong").status_code, client.post("/accounts/delete/", {"password": "wrong"}).status_code]
    refused = _export(client)
    assert codes == [200, 200]
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert client.post("/accounts/delete/", {"password": PASSWORD, "public_work": "remove"}).status_code == 429
    assert get_user_model().objects.filter(username="ada").exists()
    assert _export(_signed_in(world.bob), "bob's long pass phrase").status_code == 200  # per account


def _board(slug: str) -> dict:
    response = Client().get(f"/api/v1/leaderboards/{slug}/")
    assert response.status_code == 200
    return {row["system"]: row for row in response.json()["systems"]}


def _frozen(slug: str) -> dict:
    response = Client().get(f"/datasets/{slug}/leaderboard/snapshots/1.json")
    assert response.status_code == 200
    return response.json()["board_json"]


def _deleted(world, choice: str, slug: str):
    snapshot_freeze(dataset=world.public.dataset, by="curator")
    before = _frozen(slug)
    client = _signed_in(world.ada)
    page = client.get("/accounts/delete/").content.decode()
    assert "1 submission</strong>" not in page
    assert 'value="keep"' in page
    assert 'value="remove"' in page
    done = client.post("/accounts/delete/", {"password": PASSWORD, "public_work": choice})
    assert done.status_code == 302
    assert done["Location"] == "/accounts/deleted/"
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.filter(username="ada").exists()
    return before


def _private_work_is_gone(world) -> None:
    assert not System.objects.filter(pk__in=[world.private.system_id, world.withdrawn.system_id]).exists()
    assert not storage.exists(world.private.stored_file)
    assert not storage.exists(world.withdrawn.stored_file)
    assert not Metric.objects.filter(pk=world.private_metric.metric_id).exists()
    ada_answers = Judgment.collected.filter(
        source=world.campaign.source, annotator=pseudonym(world.campaign, world.ada.pk)
    )
    bob_answers = Judgment.collected.filter(
        source=world.campaign.source, annotator=pseudonym(world.campaign, world.bob.pk)
    )
    assert not ada_answers.exists()
    assert bob_answers.count() == 3 * len(ACCR)  # the others' answers stay
    assert "bobsecretmark" in Submission.objects.get(owner=world.bob).method_name
    [notice] = [m for m in mail.outbox if m.to == ["ada@example.org"]]
    assert "deleted" in notice.subject


def test_deleting_with_public_work_kept_anonymises_it_and_keeps_its_scores(world):
    slug, system = world.public.dataset.slug, world.public.system
    numbers = list(SystemScore.objects.filter(system=system).values_list("metric_version_id", "value", "low", "high"))
    assert _board(slug)[system.slug]["submitted_by"] == "ada"  # the control
    before = _deleted(world, "keep", slug)

    _private_work_is_gone(world)
    kept = Submission.objects.get(pk=world.public.pk)
    assert kept.owner.username == ANONYMOUS_AUTHOR and not kept.owner.is_active and not kept.owner.has_usable_password()
    assert (
        list(SystemScore.objects.filter(system=system).values_list("metric_version_id", "value", "low", "high"))
        == numbers
    )
    assert storage.exists(kept.stored_file)
    row = _board(slug)[system.slug]
    assert row["submitted_by"] == ANONYMOUS_AUTHOR
    assert row["scores"]["rouge_l"]["value"] == numbers[0][1]
    page = Client().get(f"/datasets/{slug}/systems/{system.slug}/")
    assert page.status_code == 200
    assert f"submitted by {ANONYMOUS_AUTHOR}" in page.content.decode()
    metric = MetricSubmission.objects.get(pk=world.public_metric.pk)
    assert metric.owner.username == ANONYMOUS_AUTHOR
    assert Client().get(f"/api/v1/metrics/{metric.metric.slug}/").json()["submitted"]["owner"] == ANONYMOUS_AUTHOR

    # The citable snapshot: the same numbers and ranks, the row now under the anonymous author.
    after = _frozen(slug)
    [was] = [r for r in before["systems"] if r["system"] == system.slug]
    [now] = [r for r in after["systems"] if r["system"] == system.slug]
    assert was["submitted_by"] == "ada"
    assert now["submitted_by"] == ANONYMOUS_AUTHOR
    assert (now["rank"], now["scores"]["rouge_l"]["value"]) == (was["rank"], was["scores"]["rouge_l"]["value"])
    live = Client().get(f"/datasets/{slug}/leaderboard/").content.decode()
    assert f"by {ANONYMOUS_AUTHOR}" in live
    assert "by ada" not in live


def test_deleting_with_public_work_removed_takes_it_off_the_board_and_the_snapshot_keeps_its_numbers(world):
    slug, system = world.public.dataset.slug, world.public.system
    before = _deleted(world, "remove", slug)

    _private_work_is_gone(world)
    assert not System.objects.filter(pk=system.pk).exists()
    assert not storage.exists(world.public.stored_file)
    assert not Metric.objects.filter(pk=world.public_metric.metric_id).exists()
    assert system.slug not in _board(slug)
    assert Client().get(f"/datasets/{slug}/systems/{system.slug}/").status_code == 404
    after = _frozen(slug)
    [was] = [r for r in before["systems"] if r["system"] == system.slug]
    [now] = [r for r in after["systems"] if r.get("withdrawn")]
    assert was["submitted_by"] == "ada"
    assert now["submitted_by"] is None  # the owner's name goes with the rest
    assert now["name"] == "(withdrawn or made private since)"
    assert now["system"] == ""
    assert (now["rank"], now["scores"]["rouge_l"]["value"]) == (was["rank"], was["scores"]["rouge_l"]["value"])
    for path in (f"/datasets/{slug}/leaderboard/", f"/datasets/{slug}/leaderboard/snapshots/1/", "/metrics/"):
        assert Client().get(path).status_code == 200, path


def test_a_wrong_password_or_a_staff_account_deletes_nothing(world, django_user_model):
    client = _signed_in(world.ada)
    refused = client.post("/accounts/delete/", {"password": "wrong", "public_work": "remove"})
    assert refused.status_code == 200
    assert "That is not your password." in refused.content.decode()
    assert get_user_model().objects.filter(username="ada").exists()
    assert System.objects.filter(pk=world.private.system_id).exists()
    staff = django_user_model.objects.create_user("keeper", password=PASSWORD, is_staff=True)
    page = _signed_in(staff).post("/accounts/delete/", {"password": PASSWORD, "public_work": "remove"})
    assert page.status_code == 200
    assert "closed by another member of staff" in page.content.decode()
    assert get_user_model().objects.filter(username="keeper").exists()
    assert mail.outbox == []
