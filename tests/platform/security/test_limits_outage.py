"""With the limit store (Redis) unreachable every limited action fails closed — the token endpoint,
uploads over the web and the API, and paired comparisons (page and API) each answer 503 with
`Retry-After` and a sentence saying why, and store nothing — while reads stay open
(docs/security.md, "Redis down")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.authtoken.models import Token

from catalog.models import System
from plumbing import limits
from submissions.models import Submission

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a long test password"
UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens there


def _refused_for_now(response, *, api: bool) -> str:
    """The answer's text, after checking it is the outage's 503 (never a 429 or a 500)."""
    assert response.status_code == 503, (response.status_code, response.content[:300])
    assert int(response["Retry-After"]) == limits.UNAVAILABLE_RETRY
    text = response.json()["detail"] if api else response.content.decode()
    assert "rate limits cannot be checked right now" in text
    assert "Try again in 30 seconds" in text
    return text


def _upload(client: Client, url: str, dataset, *, public: bool = False, caption: str = "a caption"):
    """A valid results file: accepted whenever the limits can be checked."""
    body = json.dumps([{"image_id": item.external_id, "caption": caption} for item in dataset.items.all()])
    results = SimpleUploadedFile("r.json", body.encode())
    fields = {
        "dataset": dataset.slug,
        "method_name": "m",
        "results": results,
        **({"is_public": "on"} if public else {}),
    }
    return client.post(url, fields)


def _stored(settings) -> list[Path]:
    return [path for path in (Path(settings.MEDIA_ROOT) / "submissions").rglob("*") if path.is_file()]


def test_limited_actions_answer_503_while_the_limit_store_is_unreachable(
    fresh_page_memory, settings, demo_dataset, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    member = get_user_model().objects.create_user("member", password=PASSWORD)
    token = Token.objects.create(user=get_user_model().objects.create_user("other", password=PASSWORD)).key
    other = Client()
    other.force_login(Token.objects.get(key=token).user)
    assert _upload(other, "/submit/", demo_dataset, public=True).status_code == 302  # a second system to compare
    first, second = System.objects.filter(dataset=demo_dataset).order_by("pk")[:2]
    reachable, settings.REDIS_URL = settings.REDIS_URL, UNREACHABLE

    # The token endpoint: no token made.
    _refused_for_now(Client().post("/api/v1/auth/token/", {"username": "member", "password": PASSWORD}), api=True)
    assert not Token.objects.filter(user=member).exists()

    # Uploads, through the API and the web form: no submission, no file.
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    _refused_for_now(_upload(api, "/api/v1/submissions/", demo_dataset), api=True)
    web = Client()
    web.force_login(member)
    _refused_for_now(_upload(web, "/submit/", demo_dataset), api=False)
    assert Submission.objects.count() == 1
    assert len(_stored(settings)) == 1  # the one made before

    # Paired comparisons, on the page and the API: no bootstrap run.
    query = f"?a={first.slug}&b={second.slug}"
    _refused_for_now(Client().get(f"/datasets/{demo_dataset.slug}/compare/{query}"), api=False)
    _refused_for_now(Client().get(f"/api/v1/leaderboards/{demo_dataset.slug}/compare/{query}"), api=True)

    # Reads stay open, the compare form included (only a comparison runs a bootstrap).
    assert Client().get(f"/datasets/{demo_dataset.slug}/compare/").status_code == 200
    assert Client().get("/api/v1/datasets/").status_code == 200

    # The store back, the same requests are admitted: the 503s above were the outage's.
    settings.REDIS_URL = reachable
    assert Client().get(f"/datasets/{demo_dataset.slug}/compare/{query}").status_code == 200
    assert Client().get(f"/api/v1/leaderboards/{demo_dataset.slug}/compare/{query}").status_code == 200
    assert Client().post("/api/v1/auth/token/", {"username": "member", "password": PASSWORD}).status_code == 200
    assert _upload(api, "/api/v1/submissions/", demo_dataset, caption="another caption").status_code == 201
    assert Submission.objects.count() == 2
    assert len(_stored(settings)) == 2
