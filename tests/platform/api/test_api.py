"""The REST API: reading every resource, submitting with a token, permissions, throttling, the
schema, and user text coming back as data (never markup)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

import tests.platform.scoring.plugins  # noqa: F401
from catalog.models import Item
from scoring.models import EvaluationJob
from scoring.services.planning import dataset_plan
from submissions.models import Submission
from submissions.services import submission_plan
from tests.platform.factories import UserFactory
from tests.platform.scoring.inline import run_jobs

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def api(captioner) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=captioner).key}")
    return client


def results(dataset, text="<script>alert(1)</script> a dog") -> SimpleUploadedFile:
    return SimpleUploadedFile(
        "results.json",
        json.dumps(
            [{"image_id": item.external_id, "caption": text} for item in Item.objects.filter(dataset=dataset)]
        ).encode(),
    )


def test_submit_with_a_token_then_read_progress_scores_and_the_board(fresh_page_memory, api, demo_dataset):
    response = api.post(
        "/api/v1/submissions/",
        {
            "dataset": "demo",
            "method_name": "API captioner",
            "results": results(demo_dataset),
            "metrics": ["test_words"],
            "is_public": True,
        },
        format="multipart",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued"
    assert body["caption_count"] == 100
    assert body["metrics"] == ["test_words"]
    submission_plan(submission_id=body["id"])
    run_jobs(EvaluationJob.objects.filter(system__submission__pk=body["id"]))
    progress = api.get(f"/api/v1/submissions/{body['id']}/progress/").json()
    assert progress["status"] == "done"
    assert progress["metrics"][0]["done"] == 100
    scores = api.get("/api/v1/scores/", {"system": body["system"], "metric": "test_words", "page_size": 40}).json()
    assert len(scores["results"]) == 40 and scores["next"] and scores["results"][0]["value"] == 3.0
    assert scores["results"][0]["caption"] == "<script>alert(1)</script> a dog"  # data, as written
    rest = APIClient().get(scores["next"]).json()
    assert len(rest["results"]) == 40 and rest["results"][0]["id"] > scores["results"][-1]["id"]
    board = APIClient().get("/api/v1/leaderboards/demo/", {"sort": "test_words"}).json()
    assert board["systems"][0]["name"] == "API captioner"
    assert board["systems"][0]["scores"]["test_words"]["value"] == 3.0


def test_bad_files_come_back_as_field_errors_and_store_nothing(api, demo_dataset):
    bad = SimpleUploadedFile("r.jsonl", b'{"image_id": "x.jpg", "caption": 5}\n')
    response = api.post(
        "/api/v1/submissions/", {"dataset": "demo", "method_name": "m", "results": bad}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["results"][0] == "r.jsonl: line 1, field 'caption': expected a string, got int"
    unknown = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "m", "results": results(demo_dataset), "metrics": ["no_such_metric"]},
        format="multipart",
    )
    detail = unknown.json()["detail"]
    assert unknown.status_code == 400
    assert detail.startswith("field 'metrics': unknown metric(s) no_such_metric (known: ")
    assert "bleu_4" in detail
    assert "cider_d" in detail
    assert Submission.objects.count() == 0


def test_control_characters_are_refused_through_the_api_as_through_the_form(api, demo_dataset):
    """The API reads the method and the file through the same service: a name or a caption that
    would drive another user's terminal is a located 400, and nothing is stored."""
    named = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "Evil\x1b]0;owned\x07", "results": results(demo_dataset)},
        format="multipart",
    )
    assert named.status_code == 400
    assert named.json()["detail"].startswith(
        "field 'method name': contains a control character (U+001B at character 5)"
    )
    captioned = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "m", "results": results(demo_dataset, "a dog\x9b2J")},
        format="multipart",
    )
    assert captioned.status_code == 400
    assert captioned.json()["results"][0].startswith(
        "results.json: 100 entries (1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 90 more), field 'caption': contains a control "
        "character (U+009B at character 6)"
    )
    assert Submission.objects.count() == 0


def test_anonymous_users_read_but_cannot_submit(demo_dataset):
    client = APIClient()
    assert client.get("/api/v1/datasets/").json()["results"][0]["slug"] == "demo"
    items = client.get("/api/v1/datasets/demo/items/", {"limit": 5}).json()
    assert items["count"] == 100
    assert len(items["results"]) == 5
    response = client.post("/api/v1/submissions/", {"dataset": "demo", "method_name": "m"}, format="multipart")
    assert response.status_code == 401


def test_private_submissions_and_their_scores_are_the_owners(api, demo_dataset, django_user_model):
    created = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "Secret", "metrics": ["test_words"], "results": results(demo_dataset)},
        format="multipart",
    ).json()
    submission_plan(submission_id=created["id"])
    run_jobs(EvaluationJob.objects.filter(system__submission__pk=created["id"]))
    stranger = APIClient()
    stranger.force_authenticate(UserFactory(username="stranger"))
    assert stranger.get(f"/api/v1/submissions/{created['id']}/").status_code == 404
    assert stranger.get("/api/v1/scores/", {"system": created["system"]}).json()["results"] == []
    assert api.get(f"/api/v1/submissions/{created['id']}/").json()["method_name"] == "Secret"
    assert len(api.get("/api/v1/scores/", {"system": created["system"]}).json()["results"]) == 100


def test_quota_refusals_are_429_with_the_retry_time(api, demo_dataset, settings):
    settings.CAPBENCH_SUBMISSIONS_PER_DAY = 1
    assert (
        api.post(
            "/api/v1/submissions/",
            {"dataset": "demo", "method_name": "one", "results": results(demo_dataset)},
            format="multipart",
        ).status_code
        == 201
    )
    refused = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "two", "results": results(demo_dataset, "another")},
        format="multipart",
    )
    assert refused.status_code == 429
    assert "retry_at" in refused.json()
    assert 86000 < int(refused["Retry-After"]) <= 86401
    assert refused.json()["retry_after"] == int(refused["Retry-After"])


def test_the_same_file_again_is_answered_with_the_submission_it_made(api, demo_dataset):
    first = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "one", "results": results(demo_dataset)},
        format="multipart",
    )
    again = api.post(
        "/api/v1/submissions/",
        {"dataset": "demo", "method_name": "one again", "results": results(demo_dataset)},
        format="multipart",
    )
    assert first.status_code == 201
    assert again.status_code == 409
    assert again.json()["submission"] == first.json()["id"]
    assert again.json()["url"].endswith(f"/api/v1/submissions/{first.json()['id']}/")


def test_submission_uploads_are_rate_limited(fresh_rate_limits, api, demo_dataset, settings):
    settings.CAPBENCH_RATES["submissions"] = "2/hour"
    responses = [
        api.post("/api/v1/submissions/", {"dataset": "demo", "method_name": "m"}, format="multipart") for _ in range(3)
    ]
    assert [r.status_code for r in responses] == [400, 400, 429]
    assert 3500 < int(responses[2]["Retry-After"]) <= 3600


def test_metrics_correlations_and_the_schema(fresh_page_memory, demo_dataset):
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["bleu_4"]))
    client = APIClient()
    metrics = {m["slug"]: m for m in client.get("/api/v1/metrics/", {"limit": 100}).json()["results"]}
    # Why, in plain words for anyone; the server's own reason (what is missing where) for staff.
    assert metrics["spice"]["available"] is False
    assert "CoreNLP" not in metrics["spice"]["unavailable_reason"]
    assert metrics["spice"]["unavailable_reason"].startswith("not available on this server yet")
    staff = APIClient()
    staff.force_authenticate(UserFactory(username="staffer", is_staff=True))
    assert "CoreNLP" in staff.get("/api/v1/metrics/spice/").json()["unavailable_reason"]
    cells = client.get("/api/v1/correlations/", {"dataset": "demo", "metric": "bleu_4", "protocol": "paper"}).json()
    assert {c["statistic"] for c in cells["results"]} == {"tau_b", "tau_c"}
    board = client.get("/api/v1/leaderboards/metrics/", {"protocol": "canonical"}).json()
    assert board["metrics"][0]["metric"] == "bleu_4"
    assert len(board["columns"]) == 4
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert schema.status_code == 200
    assert "/api/v1/submissions/" in schema.json()["paths"]
    docs = client.get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in docs
    assert "cdn" not in docs.lower()


def test_staff_create_datasets_from_canonical_jsonl_and_others_cannot(
    client, demo_dataset, captioner, django_user_model
):
    download = client.get("/datasets/demo/download.jsonl").content
    upload = SimpleUploadedFile("demo.jsonl", download)
    member = APIClient()
    member.force_authenticate(captioner)
    assert member.post("/api/v1/datasets/", {"file": upload}, format="multipart").status_code == 403
    staff = APIClient()
    staff.force_authenticate(UserFactory(username="curator", is_staff=True))
    created = staff.post(
        "/api/v1/datasets/",
        {"file": SimpleUploadedFile("demo.jsonl", download), "slug": "demo-copy", "title": "Demo copy"},
        format="multipart",
    )
    assert created.status_code == 201
    assert created.json()["slug"] == "demo-copy"
    assert created.json()["counts"]["items"] == 100
    again = staff.post(
        "/api/v1/datasets/",
        {"file": SimpleUploadedFile("demo.jsonl", download), "slug": "demo-copy"},
        format="multipart",
    )
    assert again.status_code == 200
    assert again.json()["changed"] is False
    broken = staff.post(
        "/api/v1/datasets/", {"file": SimpleUploadedFile("bad.jsonl", b'{"type": "item"}\n')}, format="multipart"
    )
    assert broken.status_code == 400
    assert "bad.jsonl" in broken.json()["file"]
    assert "line 1" in broken.json()["file"]


def test_format_chooses_a_download_whatever_accept_says(fresh_page_memory, client, demo_dataset):
    """`?format=csv` is a CSV board even for a client whose Accept names JSON (as most HTTP libraries'
    do); without it, JSON."""
    answer = client.get("/api/v1/leaderboards/demo/", {"format": "csv"}, HTTP_ACCEPT="application/json")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/csv")
    assert answer.content.decode().startswith("rank,system,name,kind,baseline")
    assert (
        client.get("/api/v1/leaderboards/demo/", HTTP_ACCEPT="application/json")["Content-Type"] == "application/json"
    )
    answer = client.get("/api/v1/datasets/demo/candidates/", {"format": "csv"}, HTTP_ACCEPT="application/json")
    assert answer["Content-Type"].startswith("text/csv")
