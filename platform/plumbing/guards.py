"""Checks every request passes before any view (or Django itself) reads its body or parameters."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


def _refusal(request: HttpRequest, status: int, message: str) -> HttpResponse:
    body = {"detail": message}
    response: HttpResponse
    if request.path.startswith("/api/"):
        response = JsonResponse(body, status=status)
    else:
        response = HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")
    # No "Connection: close" here: it is hop-by-hop, the server's to set (WSGI forbids it in an
    # application's answer); servers close a connection whose body was left unread.
    return response


class RequestGuardMiddleware:
    """413 for a body whose declared Content-Length is over CAPBENCH_REQUEST_MAX_BYTES (before a byte
    of it is read), 400 for a malformed Content-Length and for a NUL byte in the path or a query
    parameter (PostgreSQL text cannot hold one)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        refusal = self._refusal(request)
        return refusal if refusal is not None else self.get_response(request)

    def _refusal(self, request: HttpRequest) -> HttpResponse | None:
        declared = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(declared)
        except ValueError:
            return _refusal(request, 400, f"Content-Length {declared[:40]!r} is not a number of bytes")
        if length < 0:
            return _refusal(request, 400, "Content-Length is negative")
        limit = settings.CAPBENCH_REQUEST_MAX_BYTES
        if length > limit:
            return _refusal(request, 413, f"the request body is {length:,} bytes; the limit is {limit:,}")
        if "\x00" in request.path_info:
            return _refusal(request, 400, "the URL path contains a NUL character")
        # (The leak crawls take this loop to read the query for its NULs only: tests/platform/security/crawl.py.)
        for name, values in request.GET.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                shown = name.replace("\x00", "\\x00")[:60]
                return _refusal(request, 400, f"query parameter {shown!r} contains a NUL character")
        return None
