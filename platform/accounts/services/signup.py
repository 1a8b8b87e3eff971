"""Making an account: one per e-mail address (compared without regard to case), and a sign-up that
never says whether an address already has an account (docs/security.md, docs/email.md).

Every valid sign-up form is answered alike, "check your e-mail", after the same work: the password
is hashed and a `PendingSignUp` row (user name, address, password hash, link secret's digest) is
written or, for an address that has one, replaced; no account is made. Then:
- an address without an account is mailed a link; following it makes the account from the row;
- an address with an account (active or not) gets no link: its owner is told that someone tried to
  sign up with it (if it was them: sign in, or reset the password). Its row is never confirmed.
A repeat sign-up replaces the row's name, password and link (only the mailbox's owner can confirm,
so the latest sign-up wins; an older link stops working). A row lives PASSWORD_RESET_TIMEOUT: an
older link is refused as expired, and dead rows are purged by each sign-up and confirmation.
Mail to one mailbox is limited at the `signup` rate per address (past it: the same page, no mail),
so nobody can fill a stranger's mailbox by signing up with it.

A user name is taken when an account has it or a live row holds it for another address (for either
kind of address, so the name says nothing about the address); that stays a form error: user names
are public (the boards name who submitted).

Django's user table does not make e-mail addresses unique (accounts made before sign-up asked for
one have none), so the rule is kept here: sign-ups and confirmations of one address run under a
PostgreSQL advisory lock named after the lower-cased address, which is looked up once the lock is
held, so two sign-ups racing with one address make one row, and one account, never two or a 500.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from accounts.models import PendingSignUp
from accounts.services.mail import mailbox_identity, notice_after_commit
from plumbing import limits
from plumbing.errors import ApplicationError, Problem

log = logging.getLogger(__name__)
USERNAME_TAKEN = "A user with that username already exists."
SIGN_UP_LOCK = 17_001  # the advisory locks' first key: sign-ups (the second is the address's hash)
BROKEN = "broken"  # a link malformed, used, replaced by a later sign-up, or never issued
EXPIRED = "expired"
HELD = "held"  # the address got an account, or the user name was taken, since the sign-up


class AccountRefused(ApplicationError, ValueError):
    """Sign-up refused on a field the form had passed (another sign-up took it meanwhile)."""

    def __init__(self, field: str, message: str):
        super().__init__(message, located=[Problem(message, where=field)])
        self.field, self.message = field, message


class LinkRefused(ApplicationError):
    """A confirmation link that makes no account: `reason` is BROKEN, EXPIRED or HELD."""

    WORDS = {BROKEN: "this link does not work", EXPIRED: "this link has expired", HELD: "its name or address was taken"}

    def __init__(self, reason: str):
        super().__init__(self.WORDS[reason])
        self.reason = reason


def _lock(email: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(lower(%s)))", [SIGN_UP_LOCK, email.strip()])


def _cutoff():
    return timezone.now() - timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def expired_purge() -> int:
    """Delete the rows older than PASSWORD_RESET_TIMEOUT (their links are dead); how many."""
    deleted, _ = PendingSignUp.objects.filter(created_at__lt=_cutoff()).delete()
    return deleted


def account_create(*, form: UserCreationForm, next_url: str = "") -> str:
    """Act on a valid sign-up form whose cleaned data holds `email` (see the module); returns what
    was done ("pending" or "told"), which the person is never shown. AccountRefused when the user
    name is held by a live sign-up of another address, or was taken since the form was checked."""
    email = form.cleaned_data["email"]
    username = form.cleaned_data["username"]
    password = make_password(form.cleaned_data["password1"])  # on every path: the same work
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        _lock(email)
        expired_purge()
        others = PendingSignUp.objects.filter(username__iexact=username).exclude(email__iexact=email)
        if others.exists() or User.objects.filter(username__iexact=username).exists():
            raise AccountRefused("username", USERNAME_TAKEN)
        fields = {
            "username": username,
            "email": email,
            "password": password,
            "token_digest": _digest(secret),
            "created_at": timezone.now(),
            "next": next_url[:500],
        }
        try:
            with transaction.atomic():
                row = PendingSignUp.objects.filter(email__iexact=email).first()
                if row is None:
                    row = PendingSignUp.objects.create(**fields)
                else:
                    PendingSignUp.objects.filter(pk=row.pk).update(**fields)
        except IntegrityError:  # the user name, held by a sign-up of another address that committed meanwhile
            raise AccountRefused("username", USERNAME_TAKEN) from None
        holder = User.objects.filter(email__iexact=email.strip()).order_by("pk").first()
        if holder is not None:
            _mail(holder.email, "signup_attempt", {"username": holder.get_username()})
            return "told"
        _mail(email, "signup_confirm", {"username": username, "link": confirmation_link(row.pk, secret)})
        return "pending"


def _mail(to: str, template: str, context: dict) -> None:
    if not limits.hit("signup", mailbox_identity(to)).allowed:
        log.info("sign-up: no e-mail sent, the address's limit is reached")
        return
    notice_after_commit(to=to, template=template, context=context)


def confirmation_link(pk: int, secret: str) -> str:
    """A sign-up's confirmation link, from SITE_URL (never a request's Host)."""
    uid = urlsafe_base64_encode(force_bytes(pk))
    return settings.SITE_URL + reverse("accounts:signup_confirm", kwargs={"uidb64": uid, "token": secret})


def pending_signup(uidb64: str, token: str, *, for_update: bool = False) -> PendingSignUp:
    """The sign-up a confirmation link names; LinkRefused(BROKEN) for a malformed, used or replaced
    link, LinkRefused(EXPIRED) for one older than PASSWORD_RESET_TIMEOUT."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (ValueError, TypeError, OverflowError):
        raise LinkRefused(BROKEN) from None
    rows = PendingSignUp.objects.select_for_update() if for_update else PendingSignUp.objects
    row = rows.filter(pk=pk).first()
    if row is None or not hmac.compare_digest(row.token_digest, _digest(token)):
        raise LinkRefused(BROKEN)
    if row.created_at < _cutoff():
        raise LinkRefused(EXPIRED)
    return row


def signup_confirm(*, uidb64: str, token: str) -> tuple[User, str]:
    """Make the account a good link names (active, with the name and password of the latest
    sign-up); returns it and where its person was going. LinkRefused otherwise; dead rows are purged
    either way, and a row whose address or user name was taken since (HELD) is removed."""
    try:
        return _confirm(uidb64, token)
    finally:
        expired_purge()


def _confirm(uidb64: str, token: str) -> tuple[User, str]:
    email = pending_signup(uidb64, token).email
    with transaction.atomic():
        _lock(email)
        row = pending_signup(uidb64, token, for_update=True)  # again under the lock: replaced or used meanwhile
        user: User | None = None
        if not (
            User.objects.filter(email__iexact=row.email).exists()
            or User.objects.filter(username__iexact=row.username).exists()
        ):
            try:
                with transaction.atomic():
                    user = User.objects.create(username=row.username, email=row.email, password=row.password)
            except IntegrityError:  # the user name, taken by an account made meanwhile
                user = None
        row.delete()
    if user is None:
        raise LinkRefused(HELD)
    log.info("sign-up: user %s confirmed the address", user.pk)
    return user, row.next
