"""Abuse limits: atomic counters in Redis, shared by every web process.

A limit is a rate ("20/hour", "5/15min") for a scope (what is limited: sign-ups, uploads, API
reads …) and an identity (a client address or an account). The first hit opens a window of the
rate's length; each hit increments the counter in the same Redis transaction
(SET NX EX + INCR + TTL), so concurrent requests are counted exactly and no more than the rate's
count are admitted in a window, whatever the concurrency. A refused request learns when the window
ends (`Retry-After`).

Rates live in settings.CAPBENCH_RATES (each from a `CAPBENCH_*_RATE` variable; docs/security.md
lists them). If Redis cannot be reached, reads (pages, media, API reads) are admitted, so the site
stays readable, and every other limited action is refused with 503 and `Retry-After` (fail closed);
the outage is logged.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse

from plumbing import valkey
from plumbing.errors import ApplicationError, TooManyRequests, Unavailable

log = logging.getLogger(__name__)
UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+?)s?\s*$")


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: int

    @classmethod
    def parse(cls, text: str) -> Rate:
        """ "20/hour", "600/min", "5/15min" (five per fifteen minutes), "3/day"."""
        match = RATE.match(text.lower())
        if not match or match.group(3) not in UNITS:
            raise ValueError(f"rate {text!r}: expected N/UNIT or N/KUNIT with UNIT one of s, min, hour, day")
        return cls(int(match.group(1)), int(match.group(2) or 1) * UNITS[match.group(3)])


@dataclass(frozen=True)
class Decision:
    allowed: bool
    count: int = 0
    limit: int = 0
    retry_after: int = 0  # seconds until the window ends (when refused)
    unavailable: bool = False  # refused because the counters could not be reached


def _key(scope: str, identity: str) -> str:
    return f"{settings.CAPBENCH_QUEUE_PREFIX}limit:{scope}:{identity}"


def rate_of(scope: str) -> Rate:
    return Rate.parse(settings.CAPBENCH_RATES[scope])


# While Redis is unreachable only reads are admitted. Every other scope (sign-ins, sign-ups, tokens,
# uploads, changes, mail, answers, paired comparisons and board computations: each guesses a password,
# stores something or runs a bootstrap) is refused, a scope added later included: fail closed.
FAIL_OPEN = frozenset({"api_address", "api_anon", "api_user", "pages_anon", "pages_user"})
UNAVAILABLE_RETRY = 30
_last_outage_log = [0.0]


def hit(scope: str, identity: str) -> Decision:
    """Count one request of `identity` against the scope's rate; refused once over it."""
    if not settings.CAPBENCH_RATE_LIMITS_ENABLED:
        return Decision(True)
    rate = rate_of(scope)
    key = _key(scope, identity)
    try:
        pipe = valkey.client().pipeline(transaction=True)
        pipe.set(key, 0, ex=rate.seconds, nx=True)
        pipe.incr(key)
        pipe.ttl(key)
        _, count, ttl = pipe.execute()
    except redis.RedisError as error:
        closed = scope not in FAIL_OPEN
        if time.monotonic() - _last_outage_log[0] > 60:  # once a minute, not once a request
            _last_outage_log[0] = time.monotonic()
            log.error(
                "rate limits cannot be checked (Redis: %s): %s requests are %s",
                error,
                scope,
                "refused" if closed else "admitted",
            )
        return Decision(False, retry_after=UNAVAILABLE_RETRY, unavailable=True) if closed else Decision(True)
    allowed = count <= rate.count
    return Decision(allowed, count, rate.count, 0 if allowed else max(1, int(ttl if ttl > 0 else rate.seconds)))


def reset(scope: str, identity: str) -> None:
    """Forget the identity's count (a successful sign-in clears its failures)."""
    try:
        valkey.client().delete(_key(scope, identity))
    except redis.RedisError as error:
        log.error("rate limit %s not reset (Redis: %s)", scope, error)


def client_address(request: HttpRequest) -> str:
    """The client's address, as limits count it.

    REMOTE_ADDR, unless it is one of CAPBENCH_TRUSTED_PROXIES (addresses or networks of our own
    reverse proxies): then X-Forwarded-For is read from the right, past every trusted proxy, and the
    first address no proxy of ours added is the client's (a client cannot choose its address by
    sending the header, nor by reaching the site around the proxy). An IPv6 client is counted by
    its /64 network (one subscriber's usual allocation), so it cannot rotate through its own
    addresses."""
    peer = _parsed(request.META.get("REMOTE_ADDR", ""))
    if peer is None:
        return "unknown"
    trusted = _trusted_networks(tuple(settings.CAPBENCH_TRUSTED_PROXIES))
    if trusted and any(peer in network for network in trusted):
        hops = [_parsed(part) for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        for hop in reversed(hops):
            if hop is None:
                break  # a hop no proxy of ours would write: stop at the last trusted one
            peer = hop
            if not any(hop in network for network in trusted):
                break
    if isinstance(peer, ipaddress.IPv6Address):
        if peer.ipv4_mapped is not None:
            return str(peer.ipv4_mapped)
        return str(ipaddress.ip_network(f"{peer}/64", strict=False).network_address)
    return str(peer)


def _parsed(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


@functools.lru_cache(maxsize=8)
def _trusted_networks(entries: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def axes_address(request: HttpRequest) -> str | None:
    """client_address for django-axes (AXES_CLIENT_IP_CALLABLE), None where the request has none."""
    address = client_address(request)
    return None if address == "unknown" else address


def account_identity(username: str) -> str:
    return username.strip().lower()[:150] or "-"


def wait_words(seconds: int) -> str:
    if seconds < 90:
        return f"{seconds} seconds"
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minutes" if minutes < 90 else f"{math.ceil(minutes / 60)} hours"


def unavailable_message(retry_after: int) -> str:
    """What a request refused while the counters cannot be reached is told (page and API alike)."""
    return (
        "The rate limits cannot be checked right now, so this is refused for the moment. "
        f"Try again in {wait_words(retry_after)}."
    )


class LimitsUnavailable(Unavailable):
    """503: the counters cannot be reached, so a limited action is refused for now (fail closed)."""

    def __init__(self, wait: int) -> None:
        super().__init__(unavailable_message(wait), retry_after=wait)


def refusal(decision: Decision, what: str) -> ApplicationError:
    """What a request the limits refuse is told: 429, or 503 where the counters could not be reached."""
    if decision.unavailable:
        return LimitsUnavailable(decision.retry_after)
    message = f"Too many {what}. Try again in {wait_words(decision.retry_after)}."
    return TooManyRequests(message, retry_after=decision.retry_after)


def too_many(request: HttpRequest, decision: Decision, what: str) -> HttpResponse:
    """The refusal with Retry-After: JSON under /api/ (the API's error body), else a page saying
    what was limited and when to retry."""
    refused = refusal(decision, what)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(refused.body(), status=refused.status)
    else:
        response = TemplateResponse(request, "limited.html", {"message": str(refused)}, status=refused.status)
        response.render()
    response["Retry-After"] = str(decision.retry_after)
    return response


def limited(scope: str, what: str, *, by: str = "address", methods: tuple[str, ...] = ("POST",)) -> Callable:
    """View decorator: count the view's `methods` requests per client address (`by="address"`) or per
    signed-in account (`by="user"`, anonymous requests by address) against settings.CAPBENCH_RATES[scope]."""

    def decorate(view: Callable) -> Callable:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method in methods:
                user = getattr(request, "user", None)
                if by == "user" and user is not None and user.is_authenticated:
                    identity = f"user:{user.pk}"
                else:
                    identity = f"address:{client_address(request)}"
                decision = hit(scope, identity)
                if not decision.allowed:
                    return too_many(request, decision, what)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


class PageRateMiddleware:
    """Every request that reaches Django (static files never do). An API request counts against
    `api_address` per address before anything else runs — a bad token, a refused POST or an unknown
    path included — and then against DRF's per-account or anonymous rate (api.throttles). Any other
    request counts per account when signed in (`pages_user`), else per address (`pages_anon`)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            decision = hit("api_address", f"address:{client_address(request)}")
            if not decision.allowed:
                return too_many(request, decision, "API requests from this address")
        else:
            user = request.user
            if user.is_authenticated:
                decision = hit("pages_user", f"user:{user.pk}")
            else:
                decision = hit("pages_anon", f"address:{client_address(request)}")
            if not decision.allowed:
                return too_many(request, decision, "requests")
        return self.get_response(request)
