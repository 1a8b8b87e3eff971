"""The one error a service raises to refuse what it was asked, whatever the app: an HTTP status,
the message people read, optionally seconds to wait (`Retry-After`) and the problems found, each
with its place (a file, a line, a field). Each app's refusals subclass it (SubmissionRefused,
QuotaExceeded, CampaignRefused, …) and keep their own names and words. It is answered in one place
each: the API by api.errors.exception_handler, a page by plumbing.refusals (FormPage, refusal_noted,
and RefusalMiddleware for one no view expected). Django-free, so that any module may raise it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Problem:
    """One thing wrong, and where: "line 7, field 'caption'", a file's name, a form field; "" for none."""

    what: str
    where: str = ""

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what


class ApplicationError(Exception):
    """A refusal: `status` is its HTTP status; the API's body carries the message, or the problems
    when there are some, under `detail_key` ({"detail": "…"}, {"results": ["…", …]})."""

    status: ClassVar[int] = 400
    detail_key: ClassVar[str] = "detail"

    def __init__(
        self,
        message: str,
        *,
        located: Iterable[Problem] = (),
        retry_after: int | None = None,
        extra: Mapping[str, object] | None = None,
        links: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.located = tuple(located)
        self._retry_after = retry_after
        self.extra = dict(extra or {})  # more of the API's body (JSON values)
        self.links = dict(links or {})  # more of the API's body: paths, sent as absolute URLs

    @property
    def retry_after(self) -> int | None:
        """Seconds after which asking again may succeed (the `Retry-After` header), or None."""
        return self._retry_after

    def lines(self) -> list[str]:
        """What a page lists: each problem with its place, or the message alone."""
        return [str(problem) for problem in self.located] or [str(self)]

    def reasons(self) -> str:
        """The problems without their places, in one sentence (or the message)."""
        return "; ".join(problem.what for problem in self.located) or str(self)

    def body(self, absolute: Callable[[str], str] = str) -> dict[str, object]:
        """The API's answer; `absolute` makes the links' paths URLs (request.build_absolute_uri)."""
        shown: object = [str(problem) for problem in self.located] if self.located else str(self)
        body: dict[str, object] = {self.detail_key: shown}
        if self.retry_after is not None:
            body["retry_after"] = self.retry_after
        return body | self.extra | {name: absolute(path) for name, path in self.links.items()}


class NotFound(ApplicationError):
    """404: nothing the viewer may see goes by this name (a page answers Django's own 404)."""

    status = 404


class TooManyRequests(ApplicationError):
    """429: the caller asked too often; `retry_after` says when to ask again."""

    status = 429


class Unavailable(ApplicationError):
    """503: what the answer needs cannot be reached now; `retry_after` says when to ask again."""

    status = 503
