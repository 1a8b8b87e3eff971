"""The web submission flow: sign up, upload (good and bad files), status, visibility, withdrawal."""

import json
import re

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile

from catalog.models import Item
from submissions.models import Submission
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def results(dataset) -> bytes:
    return json.dumps(
        [
            {"image_id": item.external_id, "caption": f"<b>caption</b> {item.pk}"}
            for item in Item.objects.filter(dataset=dataset)
        ]
    ).encode()


def upload(client, dataset, content: bytes, name="results.json", **fields):
    data = {
        "dataset": dataset.slug,
        "method_name": "My <captioner>",
        "is_public": "on",
        "results": SimpleUploadedFile(name, content, content_type="application/json"),
        **fields,
    }
    return client.post("/submit/", data)


def test_sign_up_then_upload_then_status(client, demo_dataset):
    response = client.post(
        "/accounts/signup/",
        {
            "username": "newcomer",
            "email": "newcomer@example.org",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
        },
    )
    assert response.status_code == 302
    assert response.url == "/accounts/signup/sent/"
    confirm = re.search(r"/accounts/signup/confirm/\S+/\S+/", mail.outbox[-1].body).group(0)
    client.post(confirm)  # the address confirmed from the mail, then signed in
    signed_in = client.post("/accounts/login/", {"username": "newcomer", "password": "a-long-pass-phrase-42"})
    assert signed_in.status_code == 302
    assert signed_in.url == "/submissions/mine/"
    response = upload(client, demo_dataset, results(demo_dataset), paper_url="https://example.org/p")
    submission = Submission.objects.get()
    assert response.status_code == 302
    assert response.url == f"/submissions/{submission.pk}/"
    assert submission.owner.username == "newcomer" and submission.is_public and submission.caption_count == 100
    page = client.get(response.url).content.decode()
    assert "My &lt;captioner&gt;" in page
    assert "<b>caption</b>" not in page
    progress = client.get(f"/submissions/{submission.pk}/progress.json").json()
    assert progress["status"] in ("queued", "running")
    assert progress["final"] is False
    mine = client.get("/submissions/mine/").content.decode()
    assert f"/submissions/{submission.pk}/" in mine


def test_a_bad_file_shows_every_problem_and_stores_nothing(client, demo_dataset, captioner):
    client.force_login(captioner)
    bad = json.dumps([{"image_id": "nope.jpg", "caption": "a dog"}, {"image_id": 3}]).encode()
    page = upload(client, demo_dataset, bad).content.decode()
    assert "The file was not accepted; nothing was stored." in page
    assert "results.json: entry 2, field &#x27;caption&#x27;: expected a string, got nothing" in page
    assert "results.json: entry 1, field &#x27;image_id&#x27;: &#x27;nope.jpg&#x27; is not an image" in page
    assert "100 of the dataset&#x27;s 100 images have no caption" in page  # all problems in one go
    assert Submission.objects.count() == 0


def test_uploading_needs_an_account(client, demo_dataset):
    response = client.get("/submit/")
    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/?next=/submit/")


def test_private_submissions_are_the_owners_and_withdrawal_keeps_the_data(
    client, demo_dataset, captioner, django_user_model
):
    client.force_login(captioner)
    upload(client, demo_dataset, results(demo_dataset), is_public="")
    submission = Submission.objects.get()
    assert not submission.is_public
    other = UserFactory(username="other")
    client.force_login(other)
    assert client.get(f"/submissions/{submission.pk}/").status_code == 404
    assert client.get(f"/submissions/{submission.pk}/progress.json").status_code == 404
    assert client.post(f"/submissions/{submission.pk}/withdraw/").status_code == 404  # not theirs
    client.force_login(captioner)
    client.post(f"/submissions/{submission.pk}/visibility/", {"public": "1"})
    assert Submission.objects.get().is_public
    client.post(f"/submissions/{submission.pk}/withdraw/")
    submission.refresh_from_db()
    assert submission.status == "withdrawn" and not submission.is_public
    assert submission.system.captions.count() == 100
    refused = client.post(f"/submissions/{submission.pk}/visibility/", {"public": "1"}, follow=True)
    assert refused.status_code == 200
    assert "a withdrawn submission cannot be made public" in refused.content.decode()
    assert not Submission.objects.get().is_public


def test_per_caption_scores_download_as_csv(client, demo_dataset, captioner):
    import csv
    import io

    from scoring.models import EvaluationJob
    from submissions.services import submission_plan
    from tests.platform.scoring.inline import run_jobs

    client.force_login(captioner)
    upload(client, demo_dataset, results(demo_dataset))
    submission = Submission.objects.get()
    Submission.objects.filter(pk=submission.pk).update(metrics=["rouge_l"])
    submission_plan(submission_id=submission.pk)
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    response = client.get(f"/submissions/{submission.pk}/scores.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    # One row per caption, each metric a column in points (as the page and the board CSV).
    assert len(rows) == 100 and list(rows[0]) == ["image_id", "caption", "rouge_l", "errors"]
    assert rows[0]["caption"].startswith("<b>caption</b>")
    assert 0 <= float(rows[0]["rouge_l"]) <= 100
    response = client.get(f"/submissions/{submission.pk}/scores.csv?layout=long")  # the former layout
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 100
    assert {row["metric"] for row in rows} == {"rouge_l"}
    assert float(rows[0]["points"]) == pytest.approx(100 * float(rows[0]["value"]))


def test_the_status_page_shows_numbers_first_and_the_metrics_not_computed_here_once(client, demo_dataset, captioner):
    import re

    import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
    from scoring.models import EvaluationJob
    from submissions.services import submission_plan
    from tests.platform.scoring.inline import run_jobs

    client.force_login(captioner)
    upload(client, demo_dataset, results(demo_dataset))
    submission = Submission.objects.get()
    Submission.objects.filter(pk=submission.pk).update(metrics=["test_missing_weights", "rouge_l"])
    submission_plan(submission_id=submission.pk)
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    page = client.get(f"/submissions/{submission.pk}/").content.decode()
    card = re.search(r'<section class="card" id="results-card".*?</section>', page, re.S).group(0)
    assert card.index('<tr data-metric="rouge_l">') < card.index('id="results-unavailable"')  # numbers first
    assert page.count("Test: weights absent") == 1  # named once: not a row, not a queued job, not a column
    assert "Not computed on this server:</strong> Test: weights absent (a program it needs is not installed)." in card
    assert "Still being scored" not in page
    assert "batch(es) ahead" not in page
    assert '<tr data-metric="test_missing_weights">' not in page
    assert '<span class="count">100 of 100</span> scores computed' in page


def test_the_form_keeps_a_submission_private_unless_asked(client, demo_dataset, captioner):
    import re

    client.force_login(captioner)
    form = client.get("/submit/").content.decode()
    box = re.search(r'<input[^>]*name="is_public"[^>]*>', form).group(0)
    assert not re.search(r"\schecked\b", box)
    assert "only you see it" in form
    client.post(  # the box left as it came (unticked: only the default above is new)
        "/submit/",
        {
            "dataset": demo_dataset.slug,
            "method_name": "Quiet",
            "results": SimpleUploadedFile("r.json", results(demo_dataset), content_type="application/json"),
        },
    )
    assert not Submission.objects.get().is_public


def test_withdrawing_asks_first(client, demo_dataset, captioner, django_user_model):
    client.force_login(captioner)
    upload(client, demo_dataset, results(demo_dataset))
    submission = Submission.objects.get()
    mine = client.get("/submissions/mine/").content.decode()
    assert f'href="/submissions/{submission.pk}/withdraw/"' in mine
    asked = client.get(f"/submissions/{submission.pk}/withdraw/")
    assert asked.status_code == 200
    assert "cannot be published again" in asked.content.decode()
    assert Submission.objects.get().status != "withdrawn"  # asking changed nothing
    client.force_login(UserFactory(username="someone else"))
    assert client.get(f"/submissions/{submission.pk}/withdraw/").status_code == 404
    client.force_login(captioner)
    client.post(f"/submissions/{submission.pk}/withdraw/")
    assert Submission.objects.get().status == "withdrawn"


def test_signing_up_from_a_login_redirect_comes_back(client, demo_dataset):
    login = client.get("/accounts/login/?next=/submit/").content.decode()
    assert 'href="/accounts/signup/?next=/submit/"' in login
    signup = client.get("/accounts/signup/?next=/submit/").content.decode()
    assert 'name="next" value="/submit/"' in signup
    form = {
        "username": "returning",
        "email": "returning@example.org",
        "password1": "a-long-pass-phrase-42",
        "password2": "a-long-pass-phrase-42",
    }
    # The address is confirmed from the mail first (accounts.services.signup); then the sign-in goes on to `next`.
    assert client.post("/accounts/signup/?next=/submit/", form).url == "/accounts/signup/sent/"
    confirm = re.search(r"/accounts/signup/confirm/\S+/\S+/", mail.outbox[-1].body).group(0)
    assert client.post(confirm).url == "/accounts/login/?next=%2Fsubmit%2F"
    form["username"], form["email"] = "elsewhere", "elsewhere@example.org"
    assert client.post("/accounts/signup/?next=https://evil.example/", form).url == "/accounts/signup/sent/"
    confirm = re.search(r"/accounts/signup/confirm/\S+/\S+/", mail.outbox[-1].body).group(0)
    assert client.post(confirm).url == "/accounts/login/"  # no `next` off the site
