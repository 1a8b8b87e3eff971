"""The sign-up form (with the e-mail address a password reset needs) and the reset request form.

A reset request never says whether an address has an account: the page that follows is the same,
and so is the work done before it (every request counts against the address's limit whether or not
an account has it). The limit per address stops anyone, from however many clients, from filling
one person's mailbox with reset links.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm, UserCreationForm
from django.contrib.auth.models import User

from accounts.services import EMAIL_TAKEN, email_taken
from capbench import limits

log = logging.getLogger(__name__)


class SignUpForm(UserCreationForm):
    email = forms.EmailField(
        label="E-mail address",
        max_length=254,
        help_text="For a password reset, and to tell you when your scores are ready. Never shown to anyone.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username", "email")
        help_texts = {
            "username": "Shown publicly beside your public submissions (the boards name who submitted). "
            "Letters, digits and . + - _ only.",
        }

    def clean_username(self) -> str:
        """No "@": a user name is shown on the boards, and an e-mail address there would be one shown."""
        username = super().clean_username()
        if "@" in username:
            raise forms.ValidationError("A user name is shown publicly: it may not contain “@”.", code="at_sign")
        return username

    def clean_email(self) -> str:
        email = User.objects.normalize_email(self.cleaned_data["email"])
        if email_taken(email):
            raise forms.ValidationError(EMAIL_TAKEN, code="taken")
        return email


def email_identity(email: str) -> str:
    """The e-mail address as the limit counts it: a digest, so no address is kept in Redis."""
    return "email:" + hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]


class ResetRequestForm(PasswordResetForm):
    """Django's form, sending links that start with SITE_URL (never the request's Host) to at most
    CAPBENCH_PASSWORD_RESET_RATE messages per e-mail address."""

    email = forms.EmailField(
        label="E-mail address", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )

    def get_users(self, email: str) -> Iterator[User]:
        decision = limits.hit("password_reset", email_identity(email))
        if not decision.allowed:
            log.info("password reset: no e-mail sent, the address's limit is reached")
            return iter(())
        return iter(super().get_users(email))

    def save(self, **options) -> None:  # type: ignore[override]
        site = settings.SITE_URL
        options["domain_override"] = urlsplit(site).hostname
        options["extra_email_context"] = {**(options.get("extra_email_context") or {}), "site_url": site}
        super().save(**options)
