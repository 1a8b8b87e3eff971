"""The sign-up form (with the e-mail address a password reset needs), the reset request form, and
the forms that confirm an action with the account's password or a two-factor code.

Neither sign-up nor a reset request says whether an address has an account: the page that follows
is the same, and so is the work done before it (accounts.services.signup; every reset request
counts against the address's limit whether or not an account has it). The limit per address stops
anyone, from however many clients, from filling one person's mailbox.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm, UserCreationForm
from django.contrib.auth.models import User

from accounts.services.mail import mailbox_identity
from plumbing import limits

log = logging.getLogger(__name__)


class SignUpForm(UserCreationForm):
    email = forms.EmailField(
        label="E-mail address",
        max_length=254,
        help_text="We send a link there to confirm it; then for a password reset, and to tell you when your scores "
        "are ready. Never shown to anyone.",
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
        username = super().clean_username()  # None when taken (Django records that error itself)
        if username and "@" in username:
            raise forms.ValidationError("A user name is shown publicly: it may not contain “@”.", code="at_sign")
        return username

    def clean_email(self) -> str:
        """Normalised only: whether the address has an account is never a form error (it would say so)."""
        return User.objects.normalize_email(self.cleaned_data["email"])


class ResetRequestForm(PasswordResetForm):
    """Django's form, sending links that start with SITE_URL (never the request's Host) to at most
    CAPBENCH_PASSWORD_RESET_RATE messages per e-mail address."""

    email = forms.EmailField(
        label="E-mail address", max_length=254, widget=forms.EmailInput(attrs={"autocomplete": "email"})
    )

    def get_users(self, email: str) -> Iterator[User]:
        decision = limits.hit("password_reset", mailbox_identity(email))
        if not decision.allowed:
            log.info("password reset: no e-mail sent, the address's limit is reached")
            return iter(())
        return iter(super().get_users(email))

    def save(self, **options) -> None:  # type: ignore[override]
        site = settings.SITE_URL
        options["domain_override"] = urlsplit(site).hostname
        options["extra_email_context"] = {**(options.get("extra_email_context") or {}), "site_url": site}
        super().save(**options)


class PasswordCheckForm(forms.Form):
    """An action that needs the account's password typed again (a download of its data, deleting it)."""

    password = forms.CharField(
        label="Your password",
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "current-password"}),
    )

    def __init__(self, user: User, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.", code="wrong_password")
        return password


class AccountDeleteForm(PasswordCheckForm):
    KEEP, REMOVE = "keep", "remove"
    public_work = forms.ChoiceField(
        label="Your public submissions and metrics",
        choices=[
            (KEEP, "Keep them on the boards, anonymised: shown as by “anonymous author”, their scores kept"),
            (REMOVE, "Remove them: they leave the boards, as if withdrawn"),
        ],
        widget=forms.RadioSelect,
    )

    field_order = ["public_work", "password"]

    @property
    def keep_public(self) -> bool:
        return self.cleaned_data.get("public_work") == self.KEEP


class CodeForm(forms.Form):
    code = forms.CharField(
        label="Code from your authenticator app",
        max_length=16,
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True}),
    )
