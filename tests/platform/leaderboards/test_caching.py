"""HTTP caching of the captioner boards: validators from the snapshot and the viewer, 304 to a
conditional request, anonymous responses kept whole until the snapshot changes, and a viewer's
private rows never in a response that a shared cache or another viewer could get."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from leaderboards.caching import PREFIX
from submissions.models import Submission
from tests.platform.leaderboards.test_boards import board, submit  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def url(dataset, query=""):
    return f"/datasets/{dataset.slug}/leaderboard/{query}"


def test_a_conditional_request_gets_a_304_until_the_board_changes(client, demo_dataset, board):  # noqa: F811
    first = client.get(url(demo_dataset))
    etag = first["ETag"]
    assert first.status_code == 200 and etag.startswith('"')
    assert not first.has_header("Last-Modified")  # the snapshot's time would tell when private work happened
    assert "no-cache" in first["Cache-Control"] and "public" in first["Cache-Control"]
    assert {"Cookie", "Authorization"} <= {part.strip() for part in first["Vary"].split(",")}
    again = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again.content == b"" and again["ETag"] == etag
    # Another query, another format: other validators.
    assert client.get(url(demo_dataset, "?download=json"))["ETag"] != etag
    assert client.get(url(demo_dataset, "?sort=test_words"), HTTP_IF_NONE_MATCH=etag).status_code == 200
    # A new submission scored on the dataset rebuilds the snapshot: the old copy is stale.
    from scoring.models import EvaluationJob
    from tests.platform.scoring.inline import run_jobs

    owner = board["owner"]
    submit(demo_dataset, owner, "Seven words", 7, ["test_words"])
    run_jobs(EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED))
    changed = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag and "Seven words" in changed.content.decode()


def test_if_modified_since_alone_never_hides_a_change(client, demo_dataset, board):  # noqa: F811
    later = client.get(url(demo_dataset), HTTP_IF_MODIFIED_SINCE="Sat, 01 Jan 2100 00:00:00 GMT")
    assert later.status_code == 200  # only the ETag decides


def test_private_work_does_not_move_what_others_are_sent(client, demo_dataset, board):  # noqa: F811
    """Scoring a private submission rebuilds the snapshot; an anonymous visitor's ETag must not change."""
    from scoring.models import EvaluationJob
    from tests.platform.scoring.inline import run_jobs

    before = client.get(url(demo_dataset))
    submit(demo_dataset, board["owner"], "Secret run", 4, ["test_words"], public=False)
    run_jobs(EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED))
    after = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 304 and after["ETag"] == before["ETag"]
    client.force_login(board["owner"])
    assert "Secret run" in client.get(url(demo_dataset)).content.decode()  # the owner's board did change


def test_anonymous_boards_are_kept_whole_and_private_rows_never_reach_them(client, demo_dataset, board):  # noqa: F811
    anonymous = client.get(url(demo_dataset))
    assert cache.get(PREFIX + anonymous["ETag"])["content"] == anonymous.content
    served = client.get(url(demo_dataset))  # from the cache: the same bytes
    assert served.content == anonymous.content and served["ETag"] == anonymous["ETag"]

    client.force_login(board["owner"])
    mine = client.get(url(demo_dataset))
    assert "Private one" in mine.content.decode() and "Private one" not in anonymous.content.decode()
    assert mine["ETag"] != anonymous["ETag"] and "private" in mine["Cache-Control"]
    assert cache.get(PREFIX + mine["ETag"]) is None  # a viewer's page is never kept for others
    client.logout()
    # The owner's validator shown by someone else: not a 304, and no private row.
    other = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=mine["ETag"])
    assert other.status_code == 200 and "Private one" not in other.content.decode()


def test_a_change_of_visibility_changes_the_validator_at_once(client, demo_dataset, board):  # noqa: F811
    from submissions.services import submission_visibility_set

    before = client.get(url(demo_dataset))
    submission_visibility_set(submission=Submission.objects.get(pk=board["hidden"].pk), is_public=True)
    after = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200 and "Private one" in after.content.decode()


def test_the_api_board_answers_conditional_requests_per_token(demo_dataset, board):  # noqa: F811
    from rest_framework.authtoken.models import Token

    api = APIClient()
    path = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    anonymous = api.get(path)
    assert anonymous.status_code == 200 and api.get(path, HTTP_IF_NONE_MATCH=anonymous["ETag"]).status_code == 304
    token = Token.objects.create(user=board["owner"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    owner = api.get(path, HTTP_IF_NONE_MATCH=anonymous["ETag"])
    assert owner.status_code == 200 and "Private one" in [s["name"] for s in owner.json()["systems"]]
    assert "private" in owner["Cache-Control"]
