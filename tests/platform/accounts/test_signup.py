"""Sign-up asks for an e-mail address (required, checked, one account per address whatever its case)
and never says whether an address has an account: every valid form gets the same page, a new
address a link to confirm it, an address with an account a word to its owner. A user name already
taken stays a form error (user names are public). Never a 500, even for sign-ups racing."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password
from django.core import mail
from django.db import connections
from django.test import Client
from django.utils import timezone

from accounts.models import PendingSignUp

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-pass-phrase-42"
CONFIRM = re.compile(r"https?://\S+/accounts/signup/confirm/\S+/\S+/")


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = "https://capbench.example"
    return settings.SITE_URL


def sign_up(client: Client, username: str, email: str | None, next_: str = ""):
    form = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    if email is not None:
        form["email"] = email
    return client.post("/accounts/signup/" + (f"?next={next_}" if next_ else ""), form)


def confirmation_path(message, site: str) -> str:
    links = CONFIRM.findall(message.body)
    assert len(links) == 1 and links[0].startswith(site + "/accounts/signup/confirm/")
    return links[0].removeprefix(site)


def test_the_form_asks_for_an_address_and_the_account_waits_for_its_confirmation(client, site):
    page = client.get("/accounts/signup/").content.decode()
    assert 'type="email" name="email"' in page
    assert 'id="id_email"' in page
    assert "required" in page
    response = sign_up(client, "ada", "Ada.Lovelace@Example.ORG", next_="/submit/")
    assert response.status_code == 302
    assert response["Location"] == "/accounts/signup/sent/"
    assert "Check your e-mail" in client.get(response["Location"]).content.decode()
    assert not get_user_model().objects.exists()  # no account until the address is confirmed
    pending = PendingSignUp.objects.get(username="ada")
    assert pending.email == "Ada.Lovelace@example.org"  # the domain lower-cased, the mailbox as typed
    assert check_password(PASSWORD, pending.password)
    assert PASSWORD not in pending.password  # its hash
    assert "_auth_user_id" not in client.session  # nobody signed in yet
    assert Client().post("/accounts/login/", {"username": "ada", "password": PASSWORD}).status_code == 200

    [message] = mail.outbox
    assert message.to == ["Ada.Lovelace@example.org"]
    assert "Confirm" in message.subject
    path = confirmation_path(message, site)
    opened = client.get(path)  # a mail scanner's GET confirms nothing
    assert opened.status_code == 200
    assert "Confirm my address" in opened.content.decode()
    assert "“ada”" in opened.content.decode()
    assert not get_user_model().objects.exists()
    confirmed = client.post(path)
    assert confirmed.status_code == 302
    assert confirmed["Location"] == "/accounts/login/?next=%2Fsubmit%2F"
    assert "Your address is confirmed" in client.get(confirmed["Location"]).content.decode()
    user = get_user_model().objects.get(username="ada")
    assert user.is_active and user.email == "Ada.Lovelace@example.org"
    signed_in = client.post(confirmed["Location"], {"username": "ada", "password": PASSWORD, "next": "/submit/"})
    assert signed_in.status_code == 302
    assert signed_in["Location"] == "/submit/"
    assert not PendingSignUp.objects.exists()
    again = Client().post(path)  # the link works once
    assert again.status_code == 200
    assert "This link does not work" in again.content.decode()


def test_an_address_with_an_account_gets_the_same_answer_and_its_owner_is_told(client, site):
    """The regression: sign-up said "An account with this e-mail address already exists"."""
    get_user_model().objects.create_user("first", "shared@example.org", "an old long password")
    taken = Client().post(
        "/accounts/signup/",
        {"username": "second", "email": "SHARED@Example.org", "password1": PASSWORD, "password2": PASSWORD},
        follow=True,
    )
    fresh = Client().post(
        "/accounts/signup/",
        {"username": "third", "email": "fresh@example.org", "password1": PASSWORD, "password2": PASSWORD},
        follow=True,
    )
    assert taken.redirect_chain == fresh.redirect_chain == [("/accounts/signup/sent/", 302)]
    assert taken.status_code == fresh.status_code == 200
    assert taken.content == fresh.content
    assert "already exists" not in taken.content.decode()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["first"]  # none until confirmed
    assert sorted(PendingSignUp.objects.values_list("username", flat=True)) == ["second", "third"]  # alike
    told, confirm = sorted(mail.outbox, key=lambda m: m.to[0])[::-1]
    assert told.to == ["shared@example.org"]
    assert "tried to sign up" in told.subject
    assert '"first"' in told.body
    assert "/accounts/password-reset/" in told.body
    assert not CONFIRM.search(told.body)
    assert confirm.to == ["fresh@example.org"]
    assert CONFIRM.search(confirm.body)


def test_signing_up_again_before_confirming_replaces_the_name_and_password(client, site):
    """The regression: a repeat sign-up re-sent the first one's link, which made the first name and
    password, so whoever signed up first with a stranger's address chose that account's password."""
    sign_up(client, "grace", "grace@example.org")  # e.g. someone else, with a password of theirs
    first = confirmation_path(mail.outbox[0], site)
    again = {"username": "grace2", "email": "Grace@example.org", "password1": "a-new-phrase-77"}
    again["password2"] = again["password1"]
    assert Client().post("/accounts/signup/", again)["Location"] == "/accounts/signup/sent/"
    assert list(PendingSignUp.objects.values_list("username", flat=True)) == ["grace2"]
    assert [m.to for m in mail.outbox] == [["grace@example.org"], ["Grace@example.org"]]
    assert '"grace2"' in mail.outbox[1].body
    refused = client.post(first)  # the first link was replaced
    assert refused.status_code == 200
    assert "This link does not work" in refused.content.decode()
    assert not get_user_model().objects.exists()
    assert client.post(confirmation_path(mail.outbox[1], site)).status_code == 302
    [user] = get_user_model().objects.all()
    assert user.username == "grace2" and user.is_active
    assert user.check_password("a-new-phrase-77")
    assert not user.check_password(PASSWORD)


def test_an_expired_link_is_refused_and_dead_sign_ups_are_purged(client, site, settings):
    sign_up(client, "late", "late@example.org")
    path = confirmation_path(mail.outbox[0], site)
    sign_up(Client(), "other", "other@example.org")
    PendingSignUp.objects.update(created_at=timezone.now() - timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1))
    opened = client.get(path)
    assert opened.status_code == 200
    assert "This link has expired" in opened.content.decode()
    refused = client.post(path)
    assert refused.status_code == 200
    assert "This link has expired" in refused.content.decode()
    assert not get_user_model().objects.exists()
    assert not PendingSignUp.objects.exists()  # both dead rows purged, not only the one confirmed
    # The name the dead sign-up held is free again.
    assert sign_up(Client(), "late", "someone-else@example.org")["Location"] == "/accounts/signup/sent/"


def test_a_user_name_says_nothing_about_whether_an_address_has_an_account(client):
    """The regression: a new address made an (inactive) account under the chosen name and a registered
    one made nothing, so signing up again with that name told which the address was. Now both hold it
    alike, in a pending sign-up, and neither makes an account."""
    get_user_model().objects.create_user("owner", "registered@example.org", "an old long password")
    first = sign_up(Client(), "probe-a", "registered@example.org")
    second = sign_up(Client(), "probe-b", "unknown@example.org")
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"]
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["owner"]
    answers = [sign_up(Client(), name, "prober@example.org") for name in ("probe-a", "probe-b")]
    for answer in answers:
        assert answer.status_code == 200
        assert "A user with that username already exists." in answer.content.decode()
    assert sorted(PendingSignUp.objects.values_list("username", flat=True)) == ["probe-a", "probe-b"]


def test_an_account_staff_deactivated_is_not_activated_by_signing_up_again(site):
    get_user_model().objects.create_user("banned", "banned@example.org", "an old long password", is_active=False)
    assert sign_up(Client(), "banned2", "banned@example.org")["Location"] == "/accounts/signup/sent/"
    [message] = mail.outbox
    assert "tried to sign up" in message.subject
    assert not CONFIRM.search(message.body)
    assert not get_user_model().objects.get(username="banned").is_active


def test_a_user_name_is_said_to_be_public_and_may_not_be_an_address(client):
    """The boards name who submitted: a user name with "@" could show an e-mail address there."""
    assert "Shown publicly beside your public submissions" in client.get("/accounts/signup/").content.decode()
    response = sign_up(client, "ada@example.org", "ada@example.org")
    assert response.status_code == 200
    assert "it may not contain" in response.content.decode()
    assert not get_user_model().objects.filter(email="ada@example.org").exists()


def test_a_user_name_taken_is_still_a_form_error(client):
    """User names are public (every board names who submitted), so saying one is taken reveals nothing."""
    get_user_model().objects.create_user("taken", "owner@example.org", "an old long password")
    response = sign_up(client, "Taken", "someone@example.org")
    assert response.status_code == 200
    assert "A user with that username already exists." in response.content.decode()
    assert mail.outbox == []


@pytest.mark.parametrize(("email", "error"), [(None, "This field is required."), ("not-an-address", "valid email")])
def test_a_missing_or_malformed_address_is_a_form_error(client, email, error):
    response = sign_up(client, "grace", email)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not get_user_model().objects.filter(username="grace").exists()


def test_sign_ups_racing_with_one_address_make_one_account():
    """Eight clients sign up at once with one address: one account, and eight identical answers."""
    count = 8
    start = threading.Barrier(count)

    def attempt(number: int):
        start.wait()
        try:
            return sign_up(Client(REMOTE_ADDR=f"10.1.0.{number}"), f"racer{number}", "Racer@Example.org")
        finally:
            connections.close_all()

    with ThreadPoolExecutor(count) as pool:
        responses = list(pool.map(attempt, range(count)))
    assert [(r.status_code, r["Location"]) for r in responses] == [(302, "/accounts/signup/sent/")] * count
    assert PendingSignUp.objects.filter(email__iexact="racer@example.org").count() == 1


def test_one_mailbox_gets_at_most_the_sign_up_rate_of_mail(fresh_rate_limits, settings):
    settings.CAPBENCH_RATES["signup"] = "2/hour"
    get_user_model().objects.create_user("owner", "owner@example.org", "an old long password")
    codes = [sign_up(Client(REMOTE_ADDR=f"10.4.0.{i}"), f"n{i}", "owner@example.org").status_code for i in range(4)]
    assert codes == [302] * 4  # the same answer every time
    assert len(mail.outbox) == 2


def test_sign_up_stays_rate_limited(fresh_rate_limits, settings):
    settings.CAPBENCH_RATES["signup"] = "2/hour"
    client = Client()
    codes = [sign_up(client, f"n{i}", f"n{i}@example.org").status_code for i in range(3)]
    assert codes == [302, 302, 429]


def test_the_form_is_laid_out_field_by_field_with_help_and_errors_beside_each(client):
    """As the login page: each field's label above it, its help text named by the input, its
    errors in the field's own box (templates/_field.html), not Django's default paragraphs."""
    page = client.get("/accounts/signup/").content.decode()
    for name in ("username", "email", "password1", "password2"):
        assert f'<label for="id_{name}">' in page
    assert 'aria-describedby="id_email_helptext"' in page
    assert 'id="id_email_helptext"' in page
    assert "Never shown to anyone." in page
    assert "<p><label" not in page
    form = {"username": "lin", "email": "lin@example.org", "password1": PASSWORD, "password2": PASSWORD + "x"}
    page = client.post("/accounts/signup/", form).content.decode()
    field = re.search(r'<div class="field invalid">\s*<label for="(\w+)">.*?</div>\s*</div>', page, re.S)
    assert field and field.group(1) == "id_password2"  # the one field in error, its error inside its box
    assert 'aria-invalid="true"' in field.group(0)
    assert "didn’t match" in field.group(0)
    login = client.get("/accounts/login/").content.decode()
    assert '<div class="field">' in login
    assert '<label for="id_username">' in login
