"""HTTP to a CapBench server: the token, the User-Agent, errors as exceptions, and retries.

Retried, with exponential backoff or the server's `Retry-After` (seconds or an HTTP-date):
  - a 429 answer, for any method: the server refused before doing anything;
  - 502, 503 and 504, and a broken or timed-out connection, for GET only: a POST that may have
    reached the server is never sent again (its upload may be stored; again it would be a 409);
  - a connection never made (refused, or its connect timed out), for any method.
At most `attempts` tries; never a sleep longer than `max_sleep`: a `Retry-After` beyond it (a daily
submission quota says hours) raises at once."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from capbench_client.errors import (
    AuthenticationFailed,
    CapBenchError,
    Conflict,
    ConnectionFailed,
    InvalidRequest,
    NotFound,
    RateLimited,
    ServerError,
)
from capbench_client.version import VERSION

USER_AGENT = f"capbench-client/{VERSION}"
RETRIED_STATUSES = frozenset({429, 502, 503, 504})
# A form's fields: a value, or several for a repeated field (metrics=a&metrics=b).
Fields = Mapping[str, str | Sequence[str]]
# Called before each retry with the attempt just failed (1-based), the seconds about to be slept and why.
RetryHook = Callable[[int, float, str], None]


def retry_after_seconds(value: str | None, *, now: datetime | None = None) -> float | None:
    """A `Retry-After` header as seconds from now: delta-seconds, or an HTTP-date (a date in the past
    is 0). None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        return float(int(text))
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is always GMT
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def _never_sent(error: requests.RequestException) -> bool:
    """Whether the connection was never made (refused, unresolved, connect timed out): nothing reached the server."""
    if isinstance(error, requests.ConnectTimeout):
        return True
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if type(cause).__name__ in ("NewConnectionError", "NameResolutionError", "ConnectionRefusedError"):
            return True
        nested = [arg for arg in getattr(cause, "args", ()) if isinstance(arg, BaseException)]
        reason = getattr(cause, "reason", None)
        cause = reason if isinstance(reason, BaseException) else nested[0] if nested else cause.__cause__
    return False


class Transport:
    """One server (`url`, its root: https://capbench.example.org) and, optionally, an API token.

    `attempts` is the most tries of one request, `max_sleep` the longest wait before a retry (seconds),
    `backoff` the first wait when the server names none (then doubled), `timeout` the connect and
    read timeouts. `sleep` is what waits (tests pass their own); `on_retry` hears of each retry."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        *,
        attempts: int = 5,
        max_sleep: float = 120.0,
        backoff: float = 1.0,
        timeout: float | tuple[float, float] = (10.0, 300.0),
        sleep: Callable[[float], None] = time.sleep,
        on_retry: RetryHook | None = None,
        session: requests.Session | None = None,
    ) -> None:
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"not a server address: {url!r} (e.g. https://capbench.example.org)")
        self.url = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        self.token = token
        self.attempts = max(1, attempts)
        self.max_sleep = max_sleep
        self.backoff = backoff
        self.timeout = timeout
        self.sleep = sleep
        self.on_retry = on_retry
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = USER_AGENT

    def address(self, path_or_url: str) -> str:
        """An API path (/api/v1/…) on this server. A full URL (a page's `next`) keeps its path and query
        but is sent to this server, so the token never goes to a host the caller did not name."""
        if "://" not in path_or_url:
            return self.url + "/" + path_or_url.lstrip("/")
        given = urlsplit(path_or_url)
        base = urlsplit(self.url)
        return urlunsplit((base.scheme, base.netloc, given.path, given.query, ""))

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        data: Fields | None = None,
        files: Mapping[str, Path] | None = None,
        stream: bool = False,
        authenticated: bool = True,
        accept: str = "application/json",
    ) -> requests.Response:
        """The answer to one request, retried as the module says; a 4xx or 5xx raises its `CapBenchError`.
        `files` are opened afresh for each try (field name → path); `accept` the media type asked for."""
        url = self.address(path)
        idempotent = method.upper() in ("GET", "HEAD", "OPTIONS")
        headers = {"Accept": accept}
        if self.token and authenticated:
            headers["Authorization"] = f"Token {self.token}"
        for attempt in range(1, self.attempts + 1):
            last = attempt == self.attempts
            try:
                with ExitStack() as opened:
                    upload = {
                        field: (file.name, opened.enter_context(file.open("rb")))
                        for field, file in (files or {}).items()
                    }
                    response = self.session.request(
                        method,
                        url,
                        params=params,
                        data=_form(data),
                        files=upload or None,
                        headers=headers,
                        timeout=self.timeout,
                        stream=stream,
                    )
            except requests.RequestException as error:
                if last or not (idempotent or _never_sent(error)):
                    raise ConnectionFailed(f"could not reach {self.url}: {_reason(error)}") from None
                self._pause(attempt, self._backoff(attempt), f"no answer ({_reason(error)})")
                continue
            if response.status_code < 400:
                return response
            if response.status_code not in RETRIED_STATUSES or (response.status_code != 429 and not idempotent):
                raise failure(response)
            wait = retry_after_seconds(response.headers.get("Retry-After"))
            if last or (wait is not None and wait > self.max_sleep):
                raise failure(response, wait)
            response.close()
            self._pause(attempt, self._backoff(attempt) if wait is None else wait, f"{response.status_code}")
        raise AssertionError("unreachable: the last attempt returns or raises")

    def json(self, method: str, path: str, **options: Any) -> Any:
        """The answer's JSON (None for an empty answer)."""
        response = self.request(method, path, **options)
        return response.json() if response.content else None

    def lines(
        self, path: str, *, params: Mapping[str, str | int] | None = None, accept: str = "*/*"
    ) -> Iterator[bytes]:
        """A streamed download's bytes, chunk by chunk."""
        response = self.request("GET", path, params=params, stream=True, accept=accept)
        with response:
            try:
                yield from response.iter_content(chunk_size=64 * 1024)
            except requests.RequestException as error:
                raise ConnectionFailed(f"the download from {self.url} broke off: {_reason(error)}") from None

    def _backoff(self, attempt: int) -> float:
        return min(self.max_sleep, self.backoff * 2 ** (attempt - 1))

    def _pause(self, attempt: int, seconds: float, why: str) -> None:
        seconds = min(seconds, self.max_sleep)
        if self.on_retry is not None:
            self.on_retry(attempt, seconds, why)
        self.sleep(seconds)


def failure(response: requests.Response, retry_after: float | None = None) -> CapBenchError:
    """The exception for an error answer, its message the server's own where it gave one."""
    code = response.status_code
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text.strip()[:500]
    detail = body.get("detail") if isinstance(body, dict) and isinstance(body.get("detail"), str) else None
    where = f"{response.request.method} {urlsplit(response.url).path}" if response.request else response.url
    if code == 400:
        return InvalidRequest(f"the server refused the request ({where}):", status=code, body=body)
    if code in (401, 403):
        return AuthenticationFailed(
            f"not allowed ({code}, {where}): {detail or 'sign in with `capbench login` or pass --token'}",
            status=code,
            body=None,
        )
    if code == 404:
        return NotFound(f"not found (404, {where}){': ' + detail if detail and detail != 'Not found.' else ''}")
    if code == 409:
        error = Conflict(detail or f"conflict (409, {where})", status=code, body=body)
        if error.page:
            error.message += f": {error.page}"
        return error
    if code == 429:
        return _rate_limited(response, body, detail, retry_after)
    if code >= 500:
        return ServerError(f"the server failed ({code} {response.reason}, {where})", status=code)
    return CapBenchError(f"unexpected answer {code} {response.reason} ({where})", status=code, body=body)


def _rate_limited(response: requests.Response, body: Any, detail: str | None, retry_after: float | None) -> RateLimited:
    """A 429's exception: the wait from `retry_after`, else the Retry-After header, else the body's."""
    if retry_after is None:
        retry_after = retry_after_seconds(response.headers.get("Retry-After"))
    if retry_after is None and isinstance(body, dict) and isinstance(body.get("retry_after"), int | float):
        retry_after = float(body["retry_after"])
    wait = f"; try again in {_duration(retry_after)}" if retry_after is not None else ""
    return RateLimited(f"{detail or 'too many requests'} (429){wait}", body=body, retry_after=retry_after)


def _form(data: Fields | None) -> list[tuple[str, str]] | None:
    if data is None:
        return None
    pairs: list[tuple[str, str]] = []
    for key, value in data.items():
        pairs += [(key, value)] if isinstance(value, str) else [(key, item) for item in value]
    return pairs


def _reason(error: requests.RequestException) -> str:
    if isinstance(error, requests.Timeout):
        return "timed out"
    if _never_sent(error):
        return "connection refused or host not found"
    return type(error).__name__


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
