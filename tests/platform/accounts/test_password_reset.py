"""Password reset end to end: the link comes by e-mail (from SITE_URL, whatever Host the request
named), works once, and sets a password that signs in. Asking never says whether an address has
an account, is limited per client address (429) and per e-mail address (no more mail), and none of
its pages is cached."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db(transaction=True)
OLD, NEW = "an old long password", "a brand new pass phrase 7"
LINK = re.compile(r"https?://\S+/accounts/password-reset/\S+/\S+/")


def signs_in(password: str) -> bool:
    """Through the login form, as a person would (302 to where it leads; the form again otherwise)."""
    return Client().post("/accounts/login/", {"username": "member", "password": password}).status_code == 302


@pytest.fixture
def member(django_user_model):
    return django_user_model.objects.create_user("member", "member@example.org", OLD)


@pytest.fixture
def site(settings):
    settings.SITE_URL = "https://capbench.example"
    settings.ALLOWED_HOSTS = ["testserver", "evil.example"]
    return settings.SITE_URL


def test_the_login_page_offers_a_reset(client):
    assert (
        'href="/accounts/password-reset/">Forgot your password?</a>' in client.get("/accounts/login/").content.decode()
    )


def test_the_whole_reset_from_the_email_to_signing_in_with_the_new_password(client, member, site):
    assert client.get("/accounts/password-reset/").status_code == 200
    # The request names another host: the link in the mail still points at the site.
    asked = client.post("/accounts/password-reset/", {"email": "MEMBER@example.org"}, HTTP_HOST="evil.example")
    assert asked.status_code == 302
    assert asked["Location"] == "/accounts/password-reset/sent/"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["member@example.org"]
    assert "new password" in message.subject
    links = LINK.findall(message.body)
    assert len(links) == 1 and links[0].startswith(site + "/accounts/password-reset/")
    assert "evil.example" not in message.body
    path = links[0].removeprefix(site)

    opened = client.get(path)  # Django moves the token into the session, out of the address bar
    assert opened.status_code == 302
    assert opened["Location"].endswith("/set-password/")
    form = client.get(opened["Location"])
    assert form.status_code == 200
    assert 'name="new_password1"' in form.content.decode()
    done = client.post(opened["Location"], {"new_password1": NEW, "new_password2": NEW})
    assert done.status_code == 302
    assert done["Location"] == "/accounts/password-reset/complete/"
    assert "Password changed" in client.get(done["Location"]).content.decode()

    assert signs_in(NEW)
    assert not signs_in(OLD)
    again = Client().get(path, follow=True)  # the link works once
    assert "This link does not work" in again.content.decode()


def test_a_mismatched_new_password_is_a_form_error_and_changes_nothing(client, member, site):
    client.post("/accounts/password-reset/", {"email": "member@example.org"})
    path = LINK.findall(mail.outbox[0].body)[0].removeprefix(site)
    set_password = client.get(path)["Location"]
    refused = client.post(set_password, {"new_password1": NEW, "new_password2": NEW + "x"})
    assert refused.status_code == 200
    assert "didn’t match" in refused.content.decode()
    assert signs_in(OLD)


def test_an_unknown_address_gets_the_same_answer_and_no_mail(member):
    known = Client().post("/accounts/password-reset/", {"email": "member@example.org"}, follow=True)
    assert len(mail.outbox) == 1  # the control: a known address is written to
    unknown = Client().post("/accounts/password-reset/", {"email": "nobody@example.org"}, follow=True)
    assert len(mail.outbox) == 1
    assert unknown.redirect_chain == known.redirect_chain == [("/accounts/password-reset/sent/", 302)]
    assert unknown.status_code == known.status_code == 200
    assert unknown.content == known.content


def test_reset_requests_are_limited_per_client_address(fresh_rate_limits, settings, member):
    settings.CAPBENCH_RATES["password_reset"] = "3/hour"
    client = Client()
    codes = [
        client.post("/accounts/password-reset/", {"email": f"someone{i}@example.org"}).status_code for i in range(5)
    ]
    assert codes == [302, 302, 302, 429, 429]
    refused = client.post("/accounts/password-reset/", {"email": "member@example.org"})
    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "password-reset requests" in refused.content.decode()
    assert mail.outbox == []  # the account's address, asked for past the limit, got nothing
    assert Client(REMOTE_ADDR="10.2.0.1").get("/accounts/password-reset/").status_code == 200  # reading is free


def test_one_mailbox_gets_at_most_the_rate_from_any_number_of_addresses(fresh_rate_limits, settings, member):
    settings.CAPBENCH_RATES["password_reset"] = "2/hour"
    responses = [
        Client(REMOTE_ADDR=f"10.3.0.{i}").post("/accounts/password-reset/", {"email": "Member@Example.org"})
        for i in range(4)
    ]
    assert [r.status_code for r in responses] == [302] * 4  # the same answer every time
    assert len(mail.outbox) == 2


def test_no_reset_page_is_cached(client, member, site):
    client.post("/accounts/password-reset/", {"email": "member@example.org"})
    path = LINK.findall(mail.outbox[0].body)[0].removeprefix(site)
    pages = [
        client.get("/accounts/password-reset/"),
        client.get("/accounts/password-reset/sent/"),
        client.get("/accounts/password-reset/complete/"),
        client.get(path),
        client.get("/accounts/password-reset/MQ/not-a-token/"),
    ]
    for page in pages:
        assert "no-store" in page.get("Cache-Control", ""), page.wsgi_request.path
    assert "This link does not work" in pages[-1].content.decode()


def test_reset_requests_are_refused_while_the_counters_are_unreachable(settings, member):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    refused = Client().post("/accounts/password-reset/", {"email": "member@example.org"})
    assert refused.status_code == 503
    assert int(refused["Retry-After"]) == 30
    assert mail.outbox == []
    assert Client().get("/accounts/password-reset/").status_code == 200  # reading stays open


def test_a_reset_revokes_the_api_token_and_signs_other_sessions_out(client, member, site):
    """Whoever held the old password may have taken a token or kept a session: the reset ends both."""
    token = Client().post("/api/v1/auth/token/", {"username": "member", "password": OLD}).json()["token"]
    assert Client(HTTP_AUTHORIZATION=f"Token {token}").get("/api/v1/datasets/").status_code == 200
    elsewhere = Client()
    elsewhere.force_login(member)
    assert elsewhere.get("/accounts/").status_code == 200  # the control: that session is signed in

    client.post("/accounts/password-reset/", {"email": "member@example.org"})
    set_password = client.get(LINK.findall(mail.outbox[0].body)[0].removeprefix(site))["Location"]
    assert client.post(set_password, {"new_password1": NEW, "new_password2": NEW}).status_code == 302

    assert Client(HTTP_AUTHORIZATION=f"Token {token}").get("/api/v1/datasets/").status_code == 401
    assert not Token.objects.filter(user=member).exists()
    assert elsewhere.get("/accounts/")["Location"].startswith("/accounts/login/")


def test_a_password_changed_anywhere_revokes_the_token_and_a_hash_upgrade_does_not(settings, member):
    """The admin's password form and `changepassword` set it as here; a sign-in that only re-hashes
    the same password (a stronger hasher configured) keeps the token."""
    token = Token.objects.create(user=member)
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher", *settings.PASSWORD_HASHERS]
    assert signs_in(OLD)  # re-hashed from MD5 to PBKDF2 on the way
    member.refresh_from_db()
    assert member.password.startswith("pbkdf2_")
    assert Token.objects.filter(pk=token.pk).exists()
    member.set_password(NEW)
    member.save()
    assert not Token.objects.filter(user=member).exists()


def test_a_sign_in_to_a_disabled_account_save_leaves_the_token_and_disabling_revokes_it(member):
    """The regression: any save of a user with an unusable password revoked its tokens, a save that
    only updates `last_login` among them. Only the save that changes the password does."""
    member.set_unusable_password()
    member.save()
    token = Token.objects.create(user=member)  # e.g. made by staff afterwards
    member.refresh_from_db()
    member.last_login = timezone.now()
    member.save(update_fields=["last_login"])
    member.first_name = "Ada"
    member.save()
    assert Token.objects.filter(pk=token.pk).exists()
    member.set_password(OLD)
    member.save()
    token = Token.objects.create(user=member)
    member.set_unusable_password()
    member.save()
    assert not Token.objects.filter(pk=token.pk).exists()
