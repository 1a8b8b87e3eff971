"""Staff two-factor sign-in (TOTP, django-otp): staff enrol an authenticator app from their account
page, confirmed with a code; with CAPBENCH_STAFF_2FA on (production's default) a staff session opens
the admin, /ops/ or any page only once a code was given in it; off (tests, `make run`), the password
is enough. Codes are taken once and their attempts are limited like sign-ins."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time

import pytest
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db
PASSWORD = "a long staff pass phrase"


def code(device: TOTPDevice, steps: int = 0) -> str:
    """The code the device's app shows now (or `steps` time steps later: a code is taken once)."""
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + steps * device.step
    return f"{totp.token():06d}"


def wrong_code(device: TOTPDevice) -> str:
    right = {code(device, steps) for steps in (-1, 0, 1)}
    return next(c for c in ("000000", "111111", "222222", "333333") if c not in right)


@pytest.fixture(autouse=True)
def _no_wait_after_a_wrong_code(settings):
    """django-otp makes each wrong code double the wait before the next is read (1 s, 2 s, …); the
    tests give a right code straight after a wrong one, so they turn that wait off."""
    settings.OTP_TOTP_THROTTLE_FACTOR = 0


@pytest.fixture
def keeper(django_user_model):
    return django_user_model.objects.create_user(
        "keeper", "keeper@example.org", PASSWORD, is_staff=True, is_superuser=True
    )


@pytest.fixture
def device(keeper):
    return TOTPDevice.objects.create(user=keeper, name="authenticator app", confirmed=True)


def signed_in(username: str = "keeper") -> Client:
    client = Client()
    assert client.post("/accounts/login/", {"username": username, "password": PASSWORD}).status_code == 302
    return client


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_staff_enrol_an_app_from_their_account_page_and_confirm_it_with_a_code(keeper, settings):
    client = signed_in()
    page = client.get("/accounts/").content.decode()
    assert 'href="/accounts/two-factor/">Set up an authenticator app</a>' in page
    enrol = client.get("/accounts/two-factor/").content.decode()
    pending = TOTPDevice.objects.get(user=keeper, confirmed=False)
    secret = re.search(r'<code id="totp-secret">([A-Z2-7 ]+)</code>', enrol).group(1)
    assert secret.replace(" ", "") == pending.config_url.split("secret=")[1].split("&")[0]
    assert "otpauth://totp/CapBench%3Akeeper?secret=" in enrol.replace("&amp;", "&")
    assert client.get("/accounts/two-factor/").content.decode().count(secret) == 1  # the same secret again

    refused = client.post("/accounts/two-factor/", {"code": wrong_code(pending)})
    assert refused.status_code == 200
    assert "That code is not right" in refused.content.decode()
    assert not TOTPDevice.objects.filter(user=keeper, confirmed=True).exists()
    done = client.post("/accounts/two-factor/", {"code": code(pending)})
    assert done.status_code == 302
    assert done["Location"] == "/accounts/"
    assert TOTPDevice.objects.get(user=keeper).confirmed
    assert "Two-factor sign-in is on" in client.get("/accounts/").content.decode()
    settings.CAPBENCH_STAFF_2FA = True
    assert client.get("/admin/").status_code == 200  # the session that enrolled is verified


def test_with_two_factor_on_the_admin_and_ops_need_a_code_after_the_password(keeper, device, settings):
    settings.CAPBENCH_STAFF_2FA = True
    client = Client()
    assert (
        client.post("/admin/login/?next=/admin/", {"username": "keeper", "password": PASSWORD, "next": "/admin/"})[
            "Location"
        ]
        == "/admin/"
    )
    admin = client.get("/admin/")
    assert admin.status_code == 302
    assert admin["Location"] == "/accounts/two-factor/verify/?next=%2Fadmin%2F"
    assert client.get("/ops/metrics")["Location"].startswith("/accounts/two-factor/verify/")
    assert client.get("/datasets/")["Location"].startswith("/accounts/two-factor/verify/")  # staff sees private work
    assert client.get("/api/v1/datasets/").status_code == 403
    form = client.get(admin["Location"]).content.decode()
    assert 'name="code"' in form
    assert 'name="next" value="/admin/"' in form

    assert (
        client.post("/accounts/two-factor/verify/", {"code": wrong_code(device), "next": "/admin/"}).status_code == 200
    )
    assert client.get("/admin/").status_code == 302
    given = code(device)
    verified = client.post("/accounts/two-factor/verify/", {"code": given, "next": "/admin/"})
    assert verified.status_code == 302
    assert verified["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert client.get("/ops/metrics").status_code == 200

    replay = signed_in()  # someone who saw the password and that code: the code was taken
    assert replay.post("/accounts/two-factor/verify/", {"code": given, "next": "/admin/"}).status_code == 200
    assert replay.get("/admin/").status_code == 302


def test_with_two_factor_on_the_token_endpoint_answers_a_staff_password_as_a_wrong_one(keeper, device, settings):
    """The regression: a right staff password got a staff-specific 403, a wrong one a 400, so the
    endpoint confirmed staff passwords without a code."""
    settings.CAPBENCH_STAFF_2FA = True
    right = Client().post("/api/v1/auth/token/", {"username": "keeper", "password": PASSWORD})
    wrong = Client().post("/api/v1/auth/token/", {"username": "keeper", "password": "not the password"})
    assert right.status_code == wrong.status_code == 400
    assert right.json() == wrong.json() == {"non_field_errors": ["Unable to log in with provided credentials."]}


def test_with_two_factor_on_a_staff_token_opens_nothing(keeper, django_user_model, settings):
    """The regression: a token issued before two-factor was turned on kept staff powers (the token
    path never meets the middleware)."""
    staff_token = Token.objects.create(user=keeper)
    member = django_user_model.objects.create_user("member", "member@example.org", PASSWORD)
    member_token = Token.objects.create(user=member)
    settings.CAPBENCH_STAFF_2FA = False
    assert Client(HTTP_AUTHORIZATION=f"Token {staff_token.key}").get("/api/v1/submissions/").status_code == 200
    settings.CAPBENCH_STAFF_2FA = True
    refused = Client(HTTP_AUTHORIZATION=f"Token {staff_token.key}").get("/api/v1/submissions/")
    assert refused.status_code == 403
    assert "two-factor" in refused.json()["detail"]
    assert Client(HTTP_AUTHORIZATION=f"Token {member_token.key}").get("/api/v1/submissions/").status_code == 200


def test_with_two_factor_off_the_password_alone_opens_the_admin(keeper, device, settings):
    settings.CAPBENCH_STAFF_2FA = False
    client = signed_in()
    assert client.get("/admin/").status_code == 200
    assert client.get("/ops/metrics").status_code == 200
    assert Client().post("/api/v1/auth/token/", {"username": "keeper", "password": PASSWORD}).status_code == 200


def test_staff_without_a_device_are_sent_to_enrol_one(keeper, settings):
    settings.CAPBENCH_STAFF_2FA = True
    client = signed_in()
    verify = client.get(client.get("/admin/")["Location"]).content.decode()
    assert 'href="/accounts/two-factor/">Set one up</a>' in verify
    assert client.get("/accounts/two-factor/").status_code == 200
    pending = TOTPDevice.objects.get(user=keeper)
    assert client.post("/accounts/two-factor/", {"code": code(pending)}).status_code == 302
    assert client.get("/admin/").status_code == 200


def test_an_enrolled_device_is_replaced_only_from_a_verified_session(keeper, device):
    client = signed_in()
    found = client.get("/accounts/two-factor/")
    assert found.status_code == 302
    assert found["Location"].startswith("/accounts/two-factor/verify/")
    assert not TOTPDevice.objects.filter(user=keeper, confirmed=False).exists()
    assert client.post("/accounts/two-factor/verify/", {"code": code(device)}).status_code == 302
    assert client.get("/accounts/two-factor/").status_code == 200
    pending = TOTPDevice.objects.get(user=keeper, confirmed=False)
    assert client.post("/accounts/two-factor/", {"code": code(pending)}).status_code == 302
    assert list(TOTPDevice.objects.filter(user=keeper).values_list("pk", flat=True)) == [pending.pk]


def test_only_staff_enrol(django_user_model):
    django_user_model.objects.create_user("member", password=PASSWORD)
    assert signed_in("member").get("/accounts/two-factor/").status_code == 404


def test_code_attempts_count_as_sign_in_attempts(fresh_rate_limits, keeper, device, settings):
    settings.CAPBENCH_RATES["login_account"] = "3/10min"  # (a successful sign-in clears its count)
    client = signed_in()
    codes = [client.post("/accounts/two-factor/verify/", {"code": wrong_code(device)}).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]


def _staff_2fa(repo_root, module: str, extra: dict[str, str]) -> bool:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CAPBENCH_", "DJANGO_"))}
    env.update(extra, DJANGO_SETTINGS_MODULE=module)
    code = "import json, django.conf as c; print(json.dumps(c.settings.CAPBENCH_STAFF_2FA))"
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=repo_root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_on_by_default_in_production_and_off_elsewhere(repo_root):
    production = {"DJANGO_SECRET_KEY": secrets.token_urlsafe(64), "DJANGO_ALLOWED_HOSTS": "capbench.example"}
    assert _staff_2fa(repo_root, "capbench.settings.production", production) is True
    assert _staff_2fa(repo_root, "capbench.settings.production", {**production, "CAPBENCH_STAFF_2FA": "0"}) is False
    assert _staff_2fa(repo_root, "capbench.settings.local", {}) is False
    assert _staff_2fa(repo_root, "capbench.settings.local", {"CAPBENCH_STAFF_2FA": "1"}) is True
