"""The API's one exception handler (REST_FRAMEWORK["EXCEPTION_HANDLER"]): a refusal
(plumbing.errors.ApplicationError) is answered with its status, its body ({"detail": "…"}, or its
problems under its own key, with `retry_after` and its extra fields) and `Retry-After`; anything
else as DRF answers it."""

from __future__ import annotations

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from plumbing.errors import ApplicationError


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if not isinstance(exc, ApplicationError):
        return drf_exception_handler(exc, context)
    request = context.get("request")
    body = exc.body(request.build_absolute_uri) if request is not None else exc.body()
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    set_rollback()
    return Response(body, status=exc.status, headers=headers)
