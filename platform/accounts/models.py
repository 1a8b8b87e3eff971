"""An account waiting for its e-mail address to be confirmed (accounts.services.signup)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class PendingSignUp(models.Model):
    """A sign-up whose address is not confirmed yet: its account exists, inactive, until the link
    mailed to the address is followed. A row here, not just `is_active`, marks it, so that an account
    staff deactivated is never re-activated by someone signing up again with its address."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pending_signup")
    created_at = models.DateTimeField(auto_now_add=True)
    next = models.CharField(max_length=500, blank=True, help_text="where the confirmed person goes after signing in")

    def __str__(self) -> str:
        return f"sign-up of user {self.user_id}, not confirmed"
