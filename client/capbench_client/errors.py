"""What can go wrong talking to a CapBench server: one exception class per kind of answer.

Every class is a `CapBenchError`, whose str() is one line of what happened followed by the
server's located problems (`field: problem`), one per line."""

from __future__ import annotations

from typing import Any


class CapBenchError(Exception):
    """A request that did not give the answer asked for. `status` is the HTTP status (None when no
    answer came), `body` the decoded answer (a dict or list for JSON, else its text)."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body

    @property
    def problems(self) -> list[str]:
        """The server's located problems, each `field: problem` (a problem not tied to a field alone)."""
        return located_problems(self.body)

    def __str__(self) -> str:
        return "\n".join([self.message, *(f"  {problem}" for problem in self.problems)])


class ConnectionFailed(CapBenchError):
    """No answer: the server could not be reached, or the connection broke."""


class InvalidRequest(CapBenchError):
    """400: the server refused what was sent; `problems` names each field and what is wrong with it
    (a results file's problems name the file and the line)."""


class AuthenticationFailed(CapBenchError):
    """401 or 403: no token, a wrong token or password, or not allowed."""


class NotFound(CapBenchError):
    """404: no such dataset, submission or page, or hidden from this account."""


class Conflict(CapBenchError):
    """409: the same results file was already submitted; `submission` is that submission's id."""

    @property
    def submission(self) -> int | None:
        value = self.body.get("submission") if isinstance(self.body, dict) else None
        return value if isinstance(value, int) else None

    @property
    def page(self) -> str | None:
        value = self.body.get("page") if isinstance(self.body, dict) else None
        return value if isinstance(value, str) else None

    @property
    def problems(self) -> list[str]:
        return []


class RateLimited(CapBenchError):
    """429: too many requests, or a daily quota spent; `retry_after` is how many seconds to wait
    (None when the server did not say)."""

    def __init__(self, message: str, *, status: int | None = 429, body: Any = None, retry_after: float | None = None):
        super().__init__(message, status=status, body=body)
        self.retry_after = retry_after

    @property
    def problems(self) -> list[str]:
        return []


class ServerError(CapBenchError):
    """5xx: the server failed or is unavailable (502, 503 and 504 are retried first)."""


class WaitTimedOut(CapBenchError):
    """`Client.wait` gave up before the submission was final."""


def located_problems(body: Any, prefix: str = "") -> list[str]:
    """DRF's error body flattened: {"results": ["a.json: line 3: …"]} → ["results: a.json: line 3: …"].
    `detail` and `non_field_errors` are written without their key; nested fields are joined with dots."""
    if isinstance(body, str):
        return [f"{prefix}: {body}" if prefix else body]
    if isinstance(body, list):
        return [line for entry in body for line in located_problems(entry, prefix)]
    if isinstance(body, dict):
        found: list[str] = []
        for key, value in body.items():
            plain = str(key) in ("detail", "non_field_errors")
            found += located_problems(value, prefix if plain else f"{prefix}.{key}" if prefix else str(key))
        return found
    if body is None:
        return []
    return [f"{prefix}: {body}" if prefix else str(body)]
