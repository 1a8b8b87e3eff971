"""Sign-in limits for every way in (the web form, the admin's form, the API token endpoint).

Two layers (docs/security.md):
- an attempt rate, atomic in Redis (plumbing.limits): `login_address` attempts per client address
  and `login_account` per account name, counted before the password is checked, so parallel
  guesses are bounded exactly; a successful sign-in clears its account's count;
- django-axes' lock-out: after AXES_FAILURE_LIMIT failures for an account or from an address,
  refused until AXES_COOLOFF_TIME has passed since the last failure.
Both answer 429 with `Retry-After` and the time in words.
"""

from __future__ import annotations

from collections.abc import Callable

from axes.helpers import get_client_username, get_cool_off
from axes.models import AccessAttempt
from django.db.models import Max, Q
from django.http import HttpRequest, HttpResponse
from django.utils import timezone

from plumbing import limits


def attempt_refusal(request: HttpRequest, username: str) -> HttpResponse | None:
    """Count one sign-in attempt for the address and the account; the 429 if either is over."""
    for scope, identity in (
        ("login_address", f"address:{limits.client_address(request)}"),
        ("login_account", f"account:{limits.account_identity(username)}"),
    ):
        decision = limits.hit(scope, identity)
        if not decision.allowed:
            return limits.too_many(request, decision, "sign-in attempts for this account or from this address")
    return None


def attempt_succeeded(username: str) -> None:
    limits.reset("login_account", f"account:{limits.account_identity(username)}")


def limited_login(view: Callable, username_field: str = "username") -> Callable:
    """Wrap a form login view (POST username/password): attempt rate first, then the view."""

    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        username = request.POST.get(username_field, "")
        refusal = attempt_refusal(request, username)
        if refusal is not None:
            return refusal
        response = view(request, *args, **kwargs)
        if request.user.is_authenticated and not getattr(request, "axes_locked_out", False):
            attempt_succeeded(username)
        return response

    return wrapped


def seconds_locked(request: HttpRequest, username: str) -> int:
    """How long until the lock-out of this address or account ends."""
    cool_off = get_cool_off(request)
    address = limits.client_address(request)
    latest = AccessAttempt.objects.filter(Q(ip_address=address) | Q(username=username)).aggregate(
        latest=Max("attempt_time")
    )["latest"]
    if cool_off is None or latest is None:
        return int(cool_off.total_seconds()) if cool_off else 60
    return max(1, int((latest + cool_off - timezone.now()).total_seconds()) + 1)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict | None = None
) -> HttpResponse:
    """Axes' answer to a locked-out sign-in (AXES_LOCKOUT_CALLABLE)."""
    username = get_client_username(request, credentials) or ""
    decision = limits.Decision(False, retry_after=seconds_locked(request, username))
    return limits.too_many(request, decision, "failed sign-in attempts for this account or from this address")
