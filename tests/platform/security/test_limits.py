"""Abuse limits under concurrency: parallel clients, and exactly the rate's count admitted.

Each test sets a small rate, fires more parallel requests than it allows (threads, each its own
client and database connection, released together by a barrier) and counts what got through.
Every refusal is a 429 with Retry-After.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connections
from django.test import Client
from rest_framework.authtoken.models import Token

from accounts.models import PendingSignUp
from catalog.models import Item
from submissions.models import Submission

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_rate_limits")]
PASSWORD = "a long test password"


def parallel(count: int, request: Callable[[int], object]) -> list:
    """`count` calls of `request(i)` in as many threads, started together."""
    start = threading.Barrier(count)

    def run(number: int):
        start.wait()
        try:
            return request(number)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def admitted(responses, expect: set[int] = frozenset({200})) -> int:
    """How many were let through; each refusal is a 429 with Retry-After, each other answer one of `expect`."""
    for response in responses:
        if response.status_code == 429:
            assert int(response["Retry-After"]) > 0, "a 429 without Retry-After"
        else:
            assert response.status_code in expect, (
                response.status_code,
                response.content[:300],
            )
    count = sum(response.status_code != 429 for response in responses)
    refusal = next((r for r in responses if r.status_code == 429), None)
    if refusal is not None:  # what refused them, should a count come out wrong
        print("first refusal:", refusal.content[:400])
    return count


@pytest.fixture
def member(db):
    return get_user_model().objects.create_user("member", password=PASSWORD)


def test_anonymous_api_reads_per_address(settings, demo_dataset):
    settings.CAPBENCH_RATES["api_anon"] = "5/min"
    responses = parallel(8, lambda i: [Client().get("/api/v1/datasets/") for _ in range(5)])
    assert admitted([r for batch in responses for r in batch]) == 5
    assert Client(REMOTE_ADDR="10.0.0.9").get("/api/v1/datasets/").status_code == 200  # another address


def test_api_reads_per_account_with_a_token(settings, member, demo_dataset):
    settings.CAPBENCH_RATES["api_user"] = "7/min"
    token = Token.objects.create(user=member).key
    responses = parallel(
        8,
        lambda i: [Client(HTTP_AUTHORIZATION=f"Token {token}").get("/api/v1/submissions/") for _ in range(4)],
    )
    flat = [r for batch in responses for r in batch]
    assert admitted(flat) == 7
    assert "throttled" in next(r for r in flat if r.status_code == 429).json()["detail"]


def test_pages_per_address(settings, demo_dataset):
    settings.CAPBENCH_RATES["pages_anon"] = "10/min"
    responses = parallel(8, lambda i: [Client().get("/datasets/") for _ in range(3)])
    flat = [r for batch in responses for r in batch]
    assert admitted(flat) == 10
    assert "Try again in" in next(r for r in flat if r.status_code == 429).content.decode()


def _bad_upload(client: Client, url: str):
    return client.post(
        url,
        {
            "dataset": "demo",
            "method_name": "m",
            "results": SimpleUploadedFile("r.json", b"[]"),
        },
    )


def test_uploads_per_account_over_web_and_api_together(settings, member, demo_dataset):
    settings.CAPBENCH_RATES["submissions"] = "3/hour"
    token = Token.objects.create(user=member).key

    def upload(number: int):
        if number % 2:
            return _bad_upload(Client(HTTP_AUTHORIZATION=f"Token {token}"), "/api/v1/submissions/")
        client = Client()
        client.force_login(member)
        return _bad_upload(client, "/submit/")

    responses = parallel(10, upload)
    assert admitted(responses, expect={400}) == 3


def test_token_creation_per_address(settings, member):
    settings.CAPBENCH_RATES["tokens"] = "4/hour"
    responses = parallel(
        8,
        lambda i: Client().post("/api/v1/auth/token/", {"username": "member", "password": PASSWORD}),
    )
    assert admitted(responses) == 4
    assert all("token" in r.json() for r in responses if r.status_code == 200)
    assert all(
        r["Cache-Control"].startswith("max-age=0") or "no-store" in r["Cache-Control"]
        for r in responses
        if r.status_code == 200
    )


@pytest.mark.parametrize(
    "url, field",
    [
        ("/accounts/login/", "username"),
        ("/admin/login/", "username"),
        ("/api/v1/auth/token/", "username"),
    ],
)
def test_sign_in_attempts_per_account(settings, member, url, field):
    settings.CAPBENCH_RATES["login_account"] = "6/10min"
    settings.AXES_FAILURE_LIMIT = 100  # the attempt rate alone is measured here
    responses = parallel(
        12,
        lambda i: Client(REMOTE_ADDR=f"10.1.0.{i + 1}").post(
            url, {field: "Member" if i % 2 else "member", "password": f"wrong {i}"}
        ),
    )  # one account, any case
    assert admitted(responses, expect={200, 400}) == 6
    # The account is refused from any address; another account from the same address is not.
    assert Client(REMOTE_ADDR="10.2.0.1").post(url, {field: "member", "password": "x"}).status_code == 429
    assert Client(REMOTE_ADDR="10.1.0.1").post(url, {field: "someone", "password": "x"}).status_code != 429


def test_sign_in_attempts_per_address(settings, member):
    settings.CAPBENCH_RATES["login_address"] = "5/10min"
    settings.AXES_FAILURE_LIMIT = 100
    responses = parallel(
        10,
        lambda i: Client().post("/accounts/login/", {"username": f"user{i}", "password": "x"}),
    )
    assert admitted(responses) == 5  # the form again, with its error


def test_sign_up_per_address(settings):
    settings.CAPBENCH_RATES["signup"] = "5/hour"
    responses = parallel(
        8,
        lambda i: Client().post(
            "/accounts/signup/",
            {
                "username": f"newcomer{i}",
                "email": f"newcomer{i}@example.org",
                "password1": "a-long-pass-phrase-42",
                "password2": "a-long-pass-phrase-42",
            },
        ),
    )
    assert admitted(responses, expect={302}) == 5
    assert PendingSignUp.objects.filter(username__startswith="newcomer").count() == 5  # accounts wait for the link


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/", "/api/v1/auth/token/"])
def test_failed_sign_ins_lock_the_account_out_and_say_when_to_retry(settings, member, url):
    settings.AXES_FAILURE_LIMIT = 5
    client = Client()
    codes = [client.post(url, {"username": "member", "password": "wrong"}).status_code for _ in range(8)]
    assert 429 not in codes[:4]
    assert codes[5:] == [429, 429, 429]
    locked = client.post(url, {"username": "member", "password": PASSWORD})  # even the right password
    assert locked.status_code == 429
    assert 800 < int(locked["Retry-After"]) <= 901
    body = locked.content.decode()
    assert "failed sign-in attempts" in body
    assert "15 minutes" in body


def test_quota_refusal_says_when_to_retry(settings, member, demo_dataset):
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 1
    client = Client()
    client.force_login(member)
    first = _upload(client, demo_dataset, "one")
    second = _upload(client, demo_dataset, "two")
    assert first.status_code == 302
    assert second.status_code == 429
    assert int(second["Retry-After"]) == 60


def _results(dataset, text: str) -> bytes:
    return json.dumps(
        [{"image_id": item.external_id, "caption": text} for item in Item.objects.filter(dataset=dataset)]
    ).encode()


def _upload(client: Client, dataset, text: str):
    return client.post(
        "/submit/",
        {
            "dataset": dataset.slug,
            "method_name": "m",
            "is_public": "on",
            "results": SimpleUploadedFile("r.json", _results(dataset, text)),
        },
    )


def _stored_files(settings) -> list[Path]:
    return sorted(p for p in (Path(settings.MEDIA_ROOT) / "submissions").rglob("*") if p.is_file())


def test_the_same_file_five_times_at_once_is_one_submission_and_one_file(settings, member, demo_dataset, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 10

    def upload(number: int):
        client = Client()
        client.force_login(member)
        return _upload(client, demo_dataset, "the same caption")

    responses = parallel(5, upload)
    assert Counter(r.status_code for r in responses) == {302: 1, 409: 4}
    only = Submission.objects.get()
    assert all(f"/submissions/{only.pk}/" in r.content.decode() for r in responses if r.status_code == 409)
    assert len(_stored_files(settings)) == 1


def test_uploads_refused_by_the_quota_leave_no_file(settings, member, demo_dataset, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 1

    def upload(number: int):
        client = Client()
        client.force_login(member)
        return _upload(client, demo_dataset, f"caption {number}")

    responses = parallel(6, upload)
    assert Counter(r.status_code for r in responses) == {302: 1, 429: 5}
    assert [p.name for p in _stored_files(settings)] == [Path(Submission.objects.get().stored_file).name]


def test_field_lengths_are_capped(member, demo_dataset):
    client = Client()
    client.force_login(member)
    token = Token.objects.create(user=member).key
    api = Client(HTTP_AUTHORIZATION=f"Token {token}")
    long = {"description": "x" * 5001}
    page = client.post(
        "/submit/",
        {
            "dataset": "demo",
            "method_name": "m",
            **long,
            "results": SimpleUploadedFile("r.json", _results(demo_dataset, "a")),
        },
    )
    assert page.status_code == 400
    assert "at most 5000 characters" in page.content.decode()
    answer = api.post(
        "/api/v1/submissions/",
        {
            "dataset": "demo",
            "method_name": "m",
            **long,
            "results": SimpleUploadedFile("r.json", _results(demo_dataset, "a")),
        },
    )
    assert answer.status_code == 400
    assert "description" in answer.json()
    answer = api.post(
        "/api/v1/submissions/",
        {
            "dataset": "demo",
            "method_name": "m" * 201,
            "paper_url": "https://example.org/" + "p" * 300,
            "results": SimpleUploadedFile("r.json", _results(demo_dataset, "a")),
        },
    )
    assert answer.status_code == 400
    assert {"method_name", "paper_url"} <= set(answer.json())
    for description in (
        "x" * 2_000_000,
        "x" * 1_000_000,
    ):  # over the form-field budget, then under it
        huge = client.post(
            "/submit/",
            {
                "dataset": "demo",
                "method_name": "m",
                "description": description,
                "results": SimpleUploadedFile("r.json", _results(demo_dataset, "a")),
            },
        )
        assert huge.status_code == 400
        answer = api.post(
            "/api/v1/submissions/",
            {
                "dataset": "demo",
                "method_name": "m",
                "description": description,
                "results": SimpleUploadedFile("r.json", _results(demo_dataset, "a")),
            },
        )
        assert answer.status_code == 400
    assert "at most 5000 characters" in huge.content.decode()
    assert "description" in answer.json()
    assert Submission.objects.count() == 0


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/",
        "//evil.example/",
        "javascript:alert(1)",
        "https:///evil.example",
        "/\\evil.example",
    ],
)
def test_sign_up_never_redirects_off_the_site(target):
    response = Client().post(
        f"/accounts/signup/?next={target}",
        {
            "username": "newcomer",
            "email": "newcomer@example.org",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
        },
    )
    # The sign-up page sends everyone to "check your e-mail"; `next` rides in the confirmation link,
    # which leads to the sign-in form with it only when it stays on the site.
    assert response.status_code == 302
    assert response["Location"] == "/accounts/signup/sent/"
    inside = Client().post(
        "/accounts/signup/?next=/datasets/",
        {
            "username": "other",
            "email": "other@example.org",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
        },
    )
    assert inside["Location"] == "/accounts/signup/sent/"
    links = [re.search(r"/accounts/signup/confirm/\S+/\S+/", message.body).group(0) for message in mail.outbox]
    assert [Client().post(link)["Location"] for link in links] == [
        "/accounts/login/",
        "/accounts/login/?next=%2Fdatasets%2F",
    ]


def test_a_declared_body_over_the_limit_is_refused_before_it_is_read(live_server, settings):
    """A 1 GiB Content-Length with a tiny body: answered 413 at once, not after a wait."""
    host, port = live_server.thread.host, live_server.thread.port
    for path in ("/api/v1/submissions/", "/submit/", "/accounts/login/"):
        with socket.create_connection((host, port), timeout=5) as raw:
            raw.sendall(
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: multipart/form-data; "
                f"boundary=x\r\nContent-Length: {2**30}\r\n\r\n--x".encode()
            )
            head = raw.recv(4096).decode("latin-1")
        assert head.startswith("HTTP/1.1 413"), head[:200]


def test_every_api_request_counts_per_address_even_with_a_bad_token(settings):
    settings.CAPBENCH_RATES["api_address"] = "5/min"
    responses = parallel(10, lambda i: Client(HTTP_AUTHORIZATION="Token junk").get("/api/v1/datasets/"))
    assert admitted(responses, expect={401}) == 5
    assert Client().post("/api/v1/nothing-here/").status_code == 429


def test_an_ipv6_client_is_counted_by_its_network_and_forwarded_for_only_from_our_proxies(
    settings,
):
    settings.CAPBENCH_RATES["signup"] = "2/hour"
    sign_up = {
        "password1": "a-long-pass-phrase-42",
        "password2": "a-long-pass-phrase-42",
    }
    codes = [
        Client(REMOTE_ADDR=f"2001:db8::{i}")
        .post(
            "/accounts/signup/",
            {"username": f"six{i}", "email": f"six{i}@example.org", **sign_up},
        )
        .status_code
        for i in range(1, 5)
    ]
    assert codes == [302, 302, 429, 429]
    # A client cannot pick its address by sending X-Forwarded-For…
    spoofed = [
        Client(REMOTE_ADDR="10.9.0.1", HTTP_X_FORWARDED_FOR=f"10.8.0.{i}")
        .post(
            "/accounts/signup/",
            {"username": f"spoof{i}", "email": f"spoof{i}@example.org", **sign_up},
        )
        .status_code
        for i in range(3)
    ]
    assert spoofed == [302, 302, 429]
    # …but behind our proxy the address it forwards is the client's, and a forged hop before it is not.
    settings.CAPBENCH_TRUSTED_PROXIES = ["10.7.0.0/24"]
    proxied = [
        Client(REMOTE_ADDR="10.7.0.2", HTTP_X_FORWARDED_FOR=f"6.6.6.6, 10.6.0.{i}")
        .post(
            "/accounts/signup/",
            {"username": f"proxied{i}", "email": f"proxied{i}@example.org", **sign_up},
        )
        .status_code
        for i in range(3)
    ]
    assert proxied == [302, 302, 302]


def test_withdrawals_visibility_changes_and_token_rotations_per_account(settings, member, demo_dataset):
    settings.CAPBENCH_RATES["actions"] = "3/hour"
    settings.CAPBENCH_RATES["tokens"] = "2/hour"
    client = Client()
    client.force_login(member)
    assert _upload(client, demo_dataset, "one").status_code == 302
    pk = Submission.objects.get().pk
    codes = [client.post(f"/submissions/{pk}/visibility/", {"public": str(i % 2)}).status_code for i in range(5)]
    assert codes == [302, 302, 302, 429, 429]
    assert [client.post("/accounts/token/").status_code for _ in range(3)] == [
        302,
        302,
        429,
    ]


def test_sign_ins_sign_ups_and_uploads_are_refused_while_the_counters_are_unreachable(settings, member):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    refused = Client().post(
        "/accounts/signup/",
        {
            "username": "x",
            "password1": "a-long-pass-phrase-42",
            "password2": "a-long-pass-phrase-42",
        },
    )
    assert refused.status_code == 503
    assert int(refused["Retry-After"]) == 30
    assert Client().post("/accounts/login/", {"username": "member", "password": PASSWORD}).status_code == 503
    assert Client().get("/accounts/login/").status_code == 200  # reading stays open
    assert not get_user_model().objects.filter(username="x").exists()


def test_a_failure_after_the_file_is_kept_removes_it(settings, member, demo_dataset, tmp_path, monkeypatch):
    from catalog.models import Caption

    settings.MEDIA_ROOT = tmp_path / "media"

    def broken(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(Caption.objects, "bulk_create", broken)
    client = Client(raise_request_exception=False)
    client.force_login(member)
    assert _upload(client, demo_dataset, "one").status_code == 500
    assert _stored_files(settings) == []
    assert Submission.objects.count() == 0
