"""Making an account: one per e-mail address (compared without regard to case), and a sign-up that
never says whether an address already has an account (docs/security.md, docs/email.md).

Every valid sign-up form is answered alike, "check your e-mail", and the same work is done before
the answer:
- a new address: the account is made inactive (a `PendingSignUp`) and a link to confirm the address
  is mailed there; following it activates the account;
- an address whose account is confirmed: no account is made, and the address's owner is told that
  someone tried to sign up with it (if it was them: sign in, or reset the password);
- an address whose account still waits for confirmation: its link is mailed again.
Mail to one mailbox is limited at the `signup` rate per address (past it: the same page, no mail),
so nobody can fill a stranger's mailbox by signing up with it.

A user name already taken stays a form error: user names are public (the boards name who
submitted), so saying one is taken tells nobody anything they could not read on a board.

Django's user table does not make e-mail addresses unique (accounts made before sign-up asked for
one have none), so the rule is kept here: the account is created under a PostgreSQL advisory lock
named after the lower-cased address, and the address is looked up once the lock is held, so two
sign-ups racing with one address make one account, never two or a 500.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from accounts.models import PendingSignUp
from accounts.services.mail import mailbox_identity, notice_after_commit
from capbench import limits

log = logging.getLogger(__name__)
USERNAME_TAKEN = "A user with that username already exists."
SIGN_UP_LOCK = 17_001  # the advisory locks' first key: sign-ups (the second is the address's hash)


class AccountRefused(ValueError):
    """Sign-up refused on a field the form had passed (another sign-up took it meanwhile)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field, self.message = field, message


class SignUpTokens(PasswordResetTokenGenerator):
    """The confirmation link's token: a reset link's machinery under its own salt (neither opens the
    other), void once the account is active; it lasts PASSWORD_RESET_TIMEOUT."""

    key_salt = "accounts.services.signup.SignUpTokens"

    def _make_hash_value(self, user, timestamp: int) -> str:
        return f"{super()._make_hash_value(user, timestamp)}{user.is_active}"


sign_up_tokens = SignUpTokens()


def account_create(*, form: UserCreationForm, next_url: str = "") -> str:
    """Act on a valid sign-up form whose cleaned data holds `email` (see the module); returns what
    was done ("created", "told", "reminded"), which the person is never shown. AccountRefused when
    the user name was taken since the form was checked."""
    email = form.cleaned_data["email"]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(lower(%s)))", [SIGN_UP_LOCK, email])
        holder = User.objects.filter(email__iexact=email.strip()).order_by("pk").first()
        if holder is None:
            try:
                with transaction.atomic():
                    user = form.save(commit=False)
                    user.is_active = False
                    user.save()
            except IntegrityError:  # the user name, taken by a sign-up that committed after the form's check
                raise AccountRefused("username", USERNAME_TAKEN) from None
            PendingSignUp.objects.create(user=user, next=next_url[:500])
            _mail(user, "signup_confirm")
            return "created"
        pending = PendingSignUp.objects.filter(user=holder).first()
        if pending is not None:
            _mail(holder, "signup_confirm")
            return "reminded"
        _mail(holder, "signup_attempt")
        return "told"


def _mail(user: User, template: str) -> None:
    if not limits.hit("signup", mailbox_identity(user.email)).allowed:
        log.info("sign-up: no e-mail sent, the address's limit is reached")
        return
    context = {"username": user.get_username()}
    if template == "signup_confirm":
        context["link"] = confirmation_link(user)
    notice_after_commit(to=user.email, template=template, context=context)


def confirmation_link(user: User) -> str:
    """The address's confirmation link, from SITE_URL (never a request's Host)."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    path = reverse("accounts:signup_confirm", kwargs={"uidb64": uid, "token": sign_up_tokens.make_token(user)})
    return settings.SITE_URL + path


def pending_user(uidb64: str, token: str) -> User | None:
    """The account a confirmation link names, while the link is good: None for a malformed,
    expired or used one, or one of an account that is not waiting."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError):
        return None
    user = User.objects.filter(pk=pk, is_active=False, pending_signup__isnull=False).first()
    if user is None or not sign_up_tokens.check_token(user, token):
        return None
    return user


def signup_confirm(*, uidb64: str, token: str) -> tuple[User, str] | None:
    """Activate the account a good link names; returns it and where its person was going."""
    with transaction.atomic():
        user = pending_user(uidb64, token)
        if user is None:
            return None
        pending = PendingSignUp.objects.select_for_update().filter(user=user).first()
        if pending is None:  # confirmed meanwhile, by the same link opened twice
            return None
        user.is_active = True
        user.save(update_fields=["is_active"])
        next_url = pending.next
        pending.delete()
    log.info("sign-up: user %s confirmed the address", user.pk)
    return user, next_url
