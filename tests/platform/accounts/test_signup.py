"""Sign-up asks for an e-mail address: required, checked, one account per address whatever its case
(a form error, never a 500, even for two sign-ups racing with one address)."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connections
from django.test import Client

from accounts.services import EMAIL_TAKEN

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-pass-phrase-42"


def sign_up(client: Client, username: str, email: str | None, next_: str = ""):
    form = {"username": username, "password1": PASSWORD, "password2": PASSWORD}
    if email is not None:
        form["email"] = email
    return client.post("/accounts/signup/" + (f"?next={next_}" if next_ else ""), form)


def test_the_form_asks_for_an_email_address_and_the_account_keeps_it(client):
    page = client.get("/accounts/signup/").content.decode()
    assert 'type="email" name="email"' in page and 'id="id_email"' in page and "required" in page
    response = sign_up(client, "ada", "Ada.Lovelace@Example.ORG", next_="/submit/")
    assert response.status_code == 302 and response["Location"] == "/submit/"
    user = get_user_model().objects.get(username="ada")
    assert user.email == "Ada.Lovelace@example.org"  # the domain lower-cased, the mailbox as typed
    assert client.session["_auth_user_id"] == str(user.pk)  # signed in


def test_a_user_name_is_said_to_be_public_and_may_not_be_an_address(client):
    """The boards name who submitted: a user name with "@" could show an e-mail address there."""
    assert "Shown publicly beside your public submissions" in client.get("/accounts/signup/").content.decode()
    response = sign_up(client, "ada@example.org", "ada@example.org")
    assert response.status_code == 200
    assert "it may not contain" in response.content.decode()
    assert not get_user_model().objects.filter(email="ada@example.org").exists()


@pytest.mark.parametrize(("email", "error"), [(None, "This field is required."), ("not-an-address", "valid email")])
def test_a_missing_or_malformed_address_is_a_form_error(client, email, error):
    response = sign_up(client, "grace", email)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not get_user_model().objects.filter(username="grace").exists()


def test_an_address_taken_in_any_case_is_refused_with_a_form_error(client):
    get_user_model().objects.create_user("first", "shared@example.org", "an old long password")
    response = sign_up(client, "second", "SHARED@Example.org")
    assert response.status_code == 200
    assert EMAIL_TAKEN in response.content.decode()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["first"]
    assert sign_up(client, "second", "other@example.org").status_code == 302  # the form itself was fine


def test_sign_ups_racing_with_one_address_make_one_account():
    """Eight clients sign up at once with one address (each passes the form's check before any
    account exists): one account, and seven pages with the form error."""
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
    assert sorted(r.status_code for r in responses) == [200] * (count - 1) + [302]
    assert all(EMAIL_TAKEN in r.content.decode() for r in responses if r.status_code == 200)
    assert get_user_model().objects.filter(email__iexact="racer@example.org").count() == 1


def test_sign_up_stays_rate_limited(settings):
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
    assert 'aria-describedby="id_email_helptext"' in page and 'id="id_email_helptext"' in page
    assert "Never shown to anyone." in page and "<p><label" not in page
    form = {"username": "lin", "email": "lin@example.org", "password1": PASSWORD, "password2": PASSWORD + "x"}
    page = client.post("/accounts/signup/", form).content.decode()
    field = re.search(r'<div class="field invalid">\s*<label for="(\w+)">.*?</div>\s*</div>', page, re.S)
    assert field and field.group(1) == "id_password2"  # the one field in error, its error inside its box
    assert 'aria-invalid="true"' in field.group(0) and "didn’t match" in field.group(0)
    login = client.get("/accounts/login/").content.decode()
    assert '<div class="field">' in login and '<label for="id_username">' in login
