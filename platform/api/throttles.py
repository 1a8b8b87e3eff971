"""DRF throttles on plumbing.limits' atomic Redis counters (DRF's own read-then-write throttles let
parallel clients through; these do not). DRF answers a refusal with 429 and `Retry-After`; a
limited action whose counter cannot be reached (Redis down: plumbing.limits.FAIL_OPEN) is answered
503 with `Retry-After`, as the pages are."""

from __future__ import annotations

from rest_framework.throttling import BaseThrottle

from plumbing import limits
from plumbing.limits import LimitsUnavailable


class _Limit(BaseThrottle):
    def scope(self, request) -> str:
        raise NotImplementedError

    def identity(self, request) -> str:
        user = request.user
        if user is not None and user.is_authenticated:
            return f"user:{user.pk}"
        return f"address:{limits.client_address(request)}"

    def allow_request(self, request, view) -> bool:
        self.decision = limits.hit(self.scope(request), self.identity(request))
        if self.decision.unavailable:
            raise LimitsUnavailable(self.decision.retry_after)
        return self.decision.allowed

    def wait(self) -> float | None:
        return self.decision.retry_after or None


class ApiRate(_Limit):
    """Every API request: per account when signed in (`api_user`), else per address (`api_anon`)."""

    def scope(self, request) -> str:
        return "api_user" if request.user is not None and request.user.is_authenticated else "api_anon"


class SubmissionRate(_Limit):
    """Upload attempts per account (`submissions`), the same counter as the web form's."""

    def scope(self, request) -> str:
        return "submissions"


class TokenRate(_Limit):
    """API tokens issued per address (`tokens`)."""

    def scope(self, request) -> str:
        return "tokens"

    def identity(self, request) -> str:
        return f"address:{limits.client_address(request)}"


class ActionRate(_Limit):
    """Visibility changes and withdrawals per account (`actions`), the same counter as the pages'."""

    def scope(self, request) -> str:
        return "actions"
