"""HTTP caching of the captioner boards: validators from the snapshot and the viewer, 304 to a
conditional request, anonymous responses kept whole until the snapshot changes, and a viewer's
private rows never in a response that a shared cache or another viewer could get."""

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

import tests.platform.scoring.plugins  # noqa: F401  (test_words and friends)
from leaderboards.caching import PREFIX
from submissions.models import Submission
from tests.platform.factories import UserFactory, submit, words

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_page_memory")]


def url(dataset, query=""):
    return f"/datasets/{dataset.slug}/leaderboard/{query}"


def test_a_conditional_request_gets_a_304_until_the_board_changes(client, demo_dataset, board):
    first = client.get(url(demo_dataset))
    etag = first["ETag"]
    assert first.status_code == 200
    assert etag.startswith('"')
    assert not first.has_header("Last-Modified")  # the snapshot's time would tell when private work happened
    assert "no-cache" in first["Cache-Control"]
    assert "public" in first["Cache-Control"]
    assert {"Cookie", "Authorization"} <= {part.strip() for part in first["Vary"].split(",")}
    again = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
    assert again.content == b""
    assert again["ETag"] == etag
    # Another query, another format: other validators.
    assert client.get(url(demo_dataset, "?download=json"))["ETag"] != etag
    assert client.get(url(demo_dataset, "?sort=test_words"), HTTP_IF_NONE_MATCH=etag).status_code == 200
    # A new submission scored on the dataset rebuilds the snapshot: the old copy is stale.
    from scoring.models import EvaluationJob
    from tests.platform.scoring.inline import run_jobs

    owner = board["owner"]
    submit(owner, demo_dataset, "Seven words", caption=words(7), metrics=["test_words"], plan=True)
    run_jobs(EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED))
    changed = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert "Seven words" in changed.content.decode()


def test_if_modified_since_alone_never_hides_a_change(client, demo_dataset, board):
    later = client.get(url(demo_dataset), HTTP_IF_MODIFIED_SINCE="Sat, 01 Jan 2100 00:00:00 GMT")
    assert later.status_code == 200  # only the ETag decides


def test_private_work_does_not_move_what_others_are_sent(client, demo_dataset, board):
    """Scoring a private submission rebuilds the snapshot; an anonymous visitor's ETag must not change."""
    from scoring.models import EvaluationJob
    from tests.platform.scoring.inline import run_jobs

    before = client.get(url(demo_dataset))
    submit(
        board["owner"], demo_dataset, "Secret run", caption=words(4), metrics=["test_words"], public=False, plan=True
    )
    run_jobs(EvaluationJob.objects.filter(status=EvaluationJob.Status.QUEUED))
    after = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 304
    assert after["ETag"] == before["ETag"]
    client.force_login(board["owner"])
    assert "Secret run" in client.get(url(demo_dataset)).content.decode()  # the owner's board did change


def test_anonymous_boards_are_kept_whole_and_private_rows_never_reach_them(client, demo_dataset, board):
    anonymous = client.get(url(demo_dataset))
    assert cache.get(PREFIX + anonymous["ETag"])["content"] == anonymous.content
    served = client.get(url(demo_dataset))  # from the cache: the same bytes
    assert served.content == anonymous.content
    assert served["ETag"] == anonymous["ETag"]

    client.force_login(board["owner"])
    mine = client.get(url(demo_dataset))
    assert "Private one" in mine.content.decode()
    assert "Private one" not in anonymous.content.decode()
    assert mine["ETag"] != anonymous["ETag"]
    assert "private" in mine["Cache-Control"]
    assert cache.get(PREFIX + mine["ETag"]) is None  # a viewer's page is never kept for others
    client.logout()
    # The owner's validator shown by someone else: not a 304, and no private row.
    other = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=mine["ETag"])
    assert other.status_code == 200
    assert "Private one" not in other.content.decode()


def test_a_change_of_visibility_changes_the_validator_at_once(client, demo_dataset, board):
    from catalog.uploads.services import upload_visibility_set
    from submissions.services import SUBMISSIONS

    before = client.get(url(demo_dataset))
    upload_visibility_set(upload=Submission.objects.get(pk=board["hidden"].pk), is_public=True, kind=SUBMISSIONS)
    after = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert "Private one" in after.content.decode()


def test_the_api_board_answers_conditional_requests_per_token(demo_dataset, board):
    from rest_framework.authtoken.models import Token

    api = APIClient()
    path = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    anonymous = api.get(path)
    assert anonymous.status_code == 200
    assert api.get(path, HTTP_IF_NONE_MATCH=anonymous["ETag"]).status_code == 304
    token = Token.objects.create(user=board["owner"])
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    owner = api.get(path, HTTP_IF_NONE_MATCH=anonymous["ETag"])
    assert owner.status_code == 200
    assert "Private one" in [s["name"] for s in owner.json()["systems"]]
    assert "private" in owner["Cache-Control"]


def test_the_anonymous_board_query_built_once_reads_as_the_orm_does(demo_dataset, board):
    """The anonymous board state comes from SQL built once per process from the visibility rule:
    it must give what the rule gives, for every slug, on every call."""
    from django.contrib.auth.models import AnonymousUser

    from catalog.models import Dataset, System
    from leaderboards.models import BoardSnapshot
    from leaderboards.requests import _board_state_queryset, board_request_state

    state = board_request_state(demo_dataset.slug, AnonymousUser())
    rule = set(System.objects.visible_to(None).filter(dataset=demo_dataset).values_list("id", flat=True))
    assert state.dataset == demo_dataset
    assert state.visible == rule
    assert board["hidden"].system_id not in rule
    assert state.version == BoardSnapshot.objects.get(dataset=demo_dataset).computed_at.isoformat()
    assert state.digests == BoardSnapshot.objects.get(dataset=demo_dataset).digests and state.digests["rows"]
    orm = _board_state_queryset(demo_dataset.slug, AnonymousUser()).get()
    assert set(orm.visible_ids) == rule
    # The owner reads through the ORM and sees their private system.
    assert board["hidden"].system_id in board_request_state(demo_dataset.slug, board["owner"]).visible
    # Another slug, a private dataset, a slug that exists nowhere: the same SQL, other values.
    other = Dataset.objects.create(slug="other", title="Other", source_format="test")
    assert board_request_state("other", AnonymousUser()).dataset == other
    assert board_request_state("other", AnonymousUser()).visible == frozenset()
    Dataset.objects.filter(pk=other.pk).update(is_public=False)
    for slug in ("other", "nowhere", "x' OR '1'='1"):
        with pytest.raises(Dataset.DoesNotExist):
            board_request_state(slug, AnonymousUser())


def test_a_withdrawal_shows_at_once_though_responses_are_kept(client, demo_dataset, board):
    """Anonymous responses are kept (in Valkey and in the process) under their ETag: a withdrawal,
    read live, changes the ETag, so the next anonymous response drops the row."""
    from catalog.uploads.services import upload_withdraw
    from submissions.services import SUBMISSIONS

    before = client.get(url(demo_dataset))
    assert "Long captions" in before.content.decode()
    assert client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 304
    upload_withdraw(upload=Submission.objects.get(pk=board["long"].pk), kind=SUBMISSIONS)
    after = client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert "Long captions" not in after.content.decode()
    names = [
        system["name"] for system in APIClient().get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()["systems"]
    ]
    assert "Long captions" not in names
    assert "Short captions" in names


def test_unknown_and_private_datasets_are_404_on_both_boards(client, demo_dataset):
    from catalog.models import Dataset

    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    assert client.get(url(demo_dataset)).status_code == 404
    assert client.get("/datasets/nowhere/leaderboard/").status_code == 404
    assert APIClient().get(f"/api/v1/leaderboards/{demo_dataset.slug}/").status_code == 404


def test_the_metric_board_answers_conditional_requests_and_follows_new_results(client, demo_dataset):
    from catalog.models import Dataset
    from scoring.models import CorrelationResult
    from scoring.services.planning import dataset_plan
    from tests.platform.scoring.inline import run_jobs

    empty = client.get("/metrics/")
    assert empty.status_code == 200
    assert "No correlations yet" in empty.content.decode()
    assert client.get("/metrics/", HTTP_IF_NONE_MATCH=empty["ETag"]).status_code == 304
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["test_words"]))
    scored = client.get("/metrics/", HTTP_IF_NONE_MATCH=empty["ETag"])
    assert scored.status_code == 200
    assert "test_words" in scored.content.decode()
    assert scored["ETag"] != empty["ETag"]
    assert "public" in scored["Cache-Control"]
    # Results written again with other values (in the service's transaction): a new table.
    from scoring.models import MetricVersion, Score
    from scoring.services.correlations import dataset_correlations

    version = MetricVersion.objects.get(metric__slug="test_words")
    dataset_correlations(dataset=demo_dataset, metric_version=version)
    assert client.get("/metrics/", HTTP_IF_NONE_MATCH=scored["ETag"]).status_code == 304  # the same values
    for score in Score.objects.filter(metric_version=version).order_by("pk")[:40]:
        score.value = -score.value * 7  # other scores: other correlations
        score.save()
    dataset_correlations(dataset=demo_dataset, metric_version=version)
    rescored = client.get("/metrics/", HTTP_IF_NONE_MATCH=scored["ETag"])
    assert rescored.status_code == 200
    assert rescored["ETag"] != scored["ETag"]
    scored = rescored
    # A dataset renamed by a bulk update (no signal, no timestamp) still shows at once.
    Dataset.objects.filter(pk=demo_dataset.pk).update(title="Renamed in bulk")
    assert "Renamed in bulk" in client.get("/metrics/", HTTP_IF_NONE_MATCH=scored["ETag"]).content.decode()
    # Deleted (the admin, a dataset or metric version removed): a new table.
    CorrelationResult.objects.filter(metric_version=version).delete()
    changed = client.get("/metrics/", HTTP_IF_NONE_MATCH=scored["ETag"])
    assert changed.status_code == 200
    assert "No correlations yet" in changed.content.decode()
    # The JSON the same way.
    api = APIClient()
    first = api.get("/api/v1/leaderboards/metrics/")
    assert first.status_code == 200
    assert api.get("/api/v1/leaderboards/metrics/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    # A private dataset's results leave the board.
    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    assert "No correlations yet" in client.get("/metrics/").content.decode()  # test_words: "No numbers yet"


def test_the_metric_board_table_is_shared_and_the_page_is_the_viewers(client, demo_dataset, django_user_model):
    from scoring.services.planning import dataset_plan
    from tests.platform.scoring.inline import run_jobs

    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["test_words"]))
    anonymous = client.get("/metrics/")
    user = UserFactory(username="reader")
    client.force_login(user)
    mine = client.get("/metrics/")
    page = mine.content.decode()
    assert "Log out reader" in page
    assert "test_words" in page
    assert "Log out" not in anonymous.content.decode()
    assert mine["ETag"] != anonymous["ETag"]
    assert "private" in mine["Cache-Control"]
    assert cache.get(PREFIX + mine["ETag"]) is None
    # A new CSRF secret (signing in again makes one): the page carrying the old token is not a 304.
    client.cookies["csrftoken"] = "a" * 32
    first = client.get("/metrics/")
    assert client.get("/metrics/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    client.cookies["csrftoken"] = "b" * 32
    assert client.get("/metrics/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 200
    assert client.post("/metrics/").status_code == 405  # (the test client sends no CSRF check)
    assert client.post(url(demo_dataset)).status_code == 405


def test_a_process_keeps_recently_used_entries_within_its_memory():
    from leaderboards.caching import Kept

    kept = Kept(max_bytes=1000)
    for name in "abcd":
        kept.put(name, name * 10, 200)
    assert kept.get("a") == "a" * 10  # used: now the most recent
    kept.put("e", "e", 200)  # 1,000 bytes: full
    kept.put("f", "f", 200)  # "b", the least recently used, goes
    assert kept.get("b") is None
    assert kept.get("a") is not None
    assert kept.size == 1000
    kept.put("huge", "x", 251)  # over a quarter of the memory: never kept
    assert kept.get("huge") is None
    assert kept.get("f") == "f"
    kept.put("f", "another", 200)  # a key's value never changes: the first stays
    assert kept.get("f") == "f"


def test_made_up_query_parameters_fill_no_cache(client, demo_dataset, board, kept_keys):
    """Anyone can invent query strings: they must map to the responses that exist, not to new
    entries in Valkey (which is also the broker) for each."""
    plain = client.get(url(demo_dataset))
    sorted_ = client.get(url(demo_dataset, "?sort=test_words&order=asc"))
    assert sorted_["ETag"] != plain["ETag"]
    responses = kept_keys(PREFIX)
    made_up = (
        "?junk=1",
        "?junk=2&sort=no_such_metric",
        "?order=sideways",
        "?only=everything",
        "?download=exe",
        "?format=api",
        "?&&",
    )
    for junk in made_up:
        answer = client.get(url(demo_dataset, junk))
        assert answer.status_code == 200 and answer["ETag"] == plain["ETag"], junk
        assert answer.content == plain.content
    for spelling in ("?order=asc&sort=test_words", "?%73ort=test_words&order=asc", "?&sort=test_words&&order=asc&x=1"):
        assert client.get(url(demo_dataset, spelling))["ETag"] == sorted_["ETag"], spelling
    assert kept_keys(PREFIX) == responses
    # The metric board the same way (an unknown family is no family); the API's formats are told apart.
    metrics = client.get("/metrics/")
    responses, tables = kept_keys(PREFIX), kept_keys("fragment:")
    for junk in ("?junk=1", "?family=a1", "?family=a2&junk=3"):
        assert client.get("/metrics/" + junk)["ETag"] == metrics["ETag"], junk
    assert (kept_keys(PREFIX), kept_keys("fragment:")) == (responses, tables)
    assert client.get("/metrics/?protocol=canonical")["ETag"] != metrics["ETag"]
    api = APIClient()
    path = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    assert api.get(path)["ETag"] != api.get(path + "?format=api")["ETag"]
    assert "Accept" in api.get(path)["Vary"]
    metric_api = "/api/v1/leaderboards/metrics/"
    assert api.get(metric_api)["ETag"] != api.get(metric_api + "?format=api")["ETag"]
    tables = kept_keys("fragment:")
    assert api.get(metric_api + "?family=a1").status_code == 404
    assert kept_keys("fragment:") == tables


def test_a_response_made_from_a_newer_snapshot_than_its_validator_is_not_kept(client, demo_dataset, board, monkeypatch):
    """The ETag is made from the snapshot's digests read with the visibility; if the snapshot is
    rebuilt before the board is read, the body is newer than the ETag: it goes out without one and
    is never kept under it (it would come back the day the board returns to the old content)."""
    import leaderboards.responses as caching  # (where the board's request reads its state)
    from leaderboards.snapshots import board_refresh

    before = client.get(url(demo_dataset))
    real = caching.board_request_state

    def then_rebuilt(slug, viewer):
        state = real(slug, viewer)
        Submission.objects.filter(pk=board["long"].pk).update(method_name="Renamed meanwhile")
        System.objects.filter(pk=board["long"].system_id).update(name="Renamed meanwhile")
        board_refresh(dataset_id=demo_dataset.pk)
        return state

    from catalog.models import System

    monkeypatch.setattr(caching, "board_request_state", then_rebuilt)
    racing = client.get(url(demo_dataset, "?sort=rouge_l"))
    assert racing.status_code == 200
    assert "Renamed meanwhile" in racing.content.decode()
    assert not racing.has_header("ETag")
    monkeypatch.setattr(caching, "board_request_state", real)
    settled = client.get(url(demo_dataset, "?sort=rouge_l"))
    assert settled["ETag"] and cache.get(PREFIX + settled["ETag"])["content"] == settled.content
    assert settled["ETag"] != before["ETag"]


def test_kept_entries_expire(monkeypatch):
    from leaderboards import caching

    kept = caching.Kept(max_bytes=1000, seconds=10)
    now = [100.0]
    monkeypatch.setattr(caching.time, "monotonic", lambda: now[0])
    kept.put("a", "value", 10)
    now[0] = 109.0
    assert kept.get("a") == "value"
    now[0] = 111.0
    assert kept.get("a") is None
    assert kept.size == 0


def test_the_boards_answer_while_valkey_is_out_of_reach(client, demo_dataset, board, settings):
    """The page cache is an optimisation: without it the boards are built each time."""
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    page = client.get(url(demo_dataset))
    assert page.status_code == 200
    assert "Long captions" in page.content.decode()
    assert client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=page["ETag"]).status_code == 304
    assert client.get("/metrics/").status_code == 200
    assert APIClient().get(f"/api/v1/leaderboards/{demo_dataset.slug}/").status_code == 200


def test_the_api_board_is_kept_whole_for_anonymous_clients_only(demo_dataset, board):
    from rest_framework.authtoken.models import Token

    api = APIClient()
    path = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    first = api.get(path)
    assert first["Content-Type"] == "application/json"
    assert "Long captions" in [s["name"] for s in first.json()["systems"]]
    assert cache.get(PREFIX + first["ETag"])["content"] == first.content
    assert api.get(path).content == first.content
    browsable = api.get(path + "?format=api")
    assert browsable.status_code == 200
    assert cache.get(PREFIX + browsable["ETag"]) is None
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=board['owner']).key}")
    owner = api.get(path)
    assert "Private one" in [s["name"] for s in owner.json()["systems"]]
    assert cache.get(PREFIX + owner["ETag"]) is None


def test_accept_parameters_fill_no_cache(demo_dataset, board, kept_keys):
    api = APIClient()
    path = f"/api/v1/leaderboards/{demo_dataset.slug}/"
    first = api.get(path)
    kept = kept_keys(PREFIX)
    for n in range(5):
        answer = api.get(path, HTTP_ACCEPT=f"application/json; junk={n}")
        assert answer.status_code == 200
        assert answer["ETag"] == first["ETag"]
    assert kept_keys(PREFIX) == kept


def test_a_snapshot_from_before_digests_is_validated_the_same(client, demo_dataset, board):
    from leaderboards.models import BoardSnapshot

    before = client.get(url(demo_dataset))
    BoardSnapshot.objects.filter(dataset=demo_dataset).update(digests={})
    assert client.get(url(demo_dataset), HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 304


def test_the_boards_answer_while_valkey_hangs(client, demo_dataset, board, settings):
    """A Valkey that accepts connections and never answers costs a page its timeouts, not a hang."""
    import socket
    import time

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(64)  # connections complete in the kernel's backlog; nothing ever reads them
    try:
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": f"redis://127.0.0.1:{silent.getsockname()[1]}/0",
                "OPTIONS": {"socket_timeout": 0.5, "socket_connect_timeout": 0.5},
            }
        }
        started = time.monotonic()
        page = client.get(url(demo_dataset))
        assert page.status_code == 200
        assert "Long captions" in page.content.decode()
        assert time.monotonic() - started < 5
    finally:
        silent.close()


def test_the_metric_board_follows_any_write_of_results(client, demo_dataset):
    """A trigger moves the results revision on every statement writing results: a bulk update
    (no signal, no timestamp) shows at once too."""
    from scoring.models import CorrelationResult
    from scoring.services.planning import dataset_plan
    from tests.platform.scoring.inline import run_jobs

    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["test_words"]))
    before = client.get("/metrics/")
    CorrelationResult.objects.filter(level="caption", protocol_name="paper").update(value=0.123456)
    after = client.get("/metrics/", HTTP_IF_NONE_MATCH=before["ETag"])
    assert after.status_code == 200
    assert "12.3" in after.content.decode()
