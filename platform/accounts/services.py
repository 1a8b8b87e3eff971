"""Making an account: one per e-mail address, compared without regard to case.

Django's user table does not make e-mail addresses unique (accounts made before sign-up asked for
one have none), so the rule is kept here: the form refuses an address already taken, and the
account is created under a PostgreSQL advisory lock named after the lower-cased address, checked
again once the lock is held, so that two sign-ups racing with one address make one account and a
form error, never two accounts or a 500.
"""

from __future__ import annotations

from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction

EMAIL_TAKEN = "An account with this e-mail address already exists. Log in, or reset its password."
USERNAME_TAKEN = "A user with that username already exists."
SIGN_UP_LOCK = 17_001  # the advisory locks' first key: sign-ups (the second is the address's hash)


class AccountRefused(ValueError):
    """Sign-up refused on a field the form had passed (another sign-up took it meanwhile)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


def email_taken(email: str) -> bool:
    return User.objects.filter(email__iexact=email.strip()).exists()


def account_create(*, form: UserCreationForm) -> User:
    """Save a valid sign-up form whose cleaned data holds `email`; AccountRefused when its e-mail
    address or user name was taken since the form was checked."""
    email = form.cleaned_data["email"]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(lower(%s)))", [SIGN_UP_LOCK, email])
        if email_taken(email):
            raise AccountRefused("email", EMAIL_TAKEN)
        try:
            with transaction.atomic():
                return form.save()
        except IntegrityError:  # the user name, taken by a sign-up that committed after the form's check
            raise AccountRefused("username", USERNAME_TAKEN) from None
