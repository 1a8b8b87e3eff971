"""A sign-up waiting for its e-mail address to be confirmed (accounts.services.signup)."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone


class PendingSignUp(models.Model):
    """A sign-up not confirmed yet: no account exists until the link mailed to the address is
    followed (then the account is made from this row, and the row goes). Every valid sign-up writes
    one, whether or not the address has an account (one whose address has an account is never mailed
    a link, so it is never confirmed): the user name it holds is taken for everyone else while it
    lives, whichever the case, so nobody learns from a name's being taken whether an address has an
    account. One row per address (a repeat sign-up replaces its name, password and link) and per user
    name; a row older than PASSWORD_RESET_TIMEOUT is dead, and purged by the next sign-up or
    confirmation."""

    username = models.CharField(max_length=150)
    email = models.EmailField(max_length=254)
    password = models.CharField(max_length=128, help_text="the chosen password's hash (make_password)")
    token_digest = models.CharField(max_length=64, help_text="SHA-256 of the link's secret, never the secret")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    next = models.CharField(max_length=500, blank=True, help_text="where the confirmed person goes after signing in")

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("email"), name="pending_signup_one_per_address"),
            models.UniqueConstraint(Lower("username"), name="pending_signup_one_per_username"),
        ]

    def __str__(self) -> str:
        return f"sign-up of {self.username!r}, not confirmed"
