"""A refusal (plumbing.errors.ApplicationError) answered on a page, in one place: a form page shows
it again with the problems and the refusal's status (FormPage); an action that redirects notes it as
an error message (refusal_noted); one no view expected gets a page of its own with its status
(RefusalMiddleware), never a 500. The API answers the same errors in api.errors."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from plumbing.errors import ApplicationError, Problem


def with_retry_after(response: HttpResponse, error: ApplicationError | None) -> HttpResponse:
    if error is not None and error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response


class Caught:
    """A `with` block whose ApplicationError goes to `noted` and ends there; any other exception
    passes. (A class, not @contextmanager: an `__exit__` typed `-> bool` tells mypy that the code
    after the block can run; with @contextmanager it reports that code unreachable.)"""

    def __init__(self, noted: Callable[[ApplicationError], None]) -> None:
        self.noted = noted

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if isinstance(error, ApplicationError):
            self.noted(error)
            return True
        return False


class FormPage:
    """A page whose action a service may refuse. The view calls the service inside `refusals()`
    (returning its success from there) and answers `response()` otherwise: the template gets
    `problems` (each with its place) and `refusal` (the error), or, with `form`, the problems as
    the form's own errors (a field's where the problem names one). The status is the refusal's
    (with its `Retry-After`), else 400 after a POST and 200 before; `status` fixes it instead."""

    def __init__(
        self,
        request: HttpRequest,
        template: str,
        context: dict[str, Any] | None = None,
        *,
        form: forms.BaseForm | None = None,
        status: int | None = None,
    ) -> None:
        self.request, self.template, self.form, self.status = request, template, form, status
        self.context: dict[str, Any] = {"problems": [], "refusal": None, **(context or {})}
        self.refusal: ApplicationError | None = None

    def refusals(self) -> Caught:
        return Caught(self._refused)

    def _refused(self, error: ApplicationError) -> None:
        self.refusal = error
        self.context["refusal"] = error
        if self.form is None:
            self.context["problems"] = error.lines()
        else:
            for problem in error.located or (Problem(str(error)),):
                field = problem.where if problem.where in self.form.fields else None
                self.form.add_error(field, problem.what)

    def response(self) -> HttpResponse:
        status = self.status or (self.refusal.status if self.refusal else None)
        status = status or (400 if self.request.method == "POST" else 200)
        return with_retry_after(render(self.request, self.template, self.context, status=status), self.refusal)


def refusal_noted(request: HttpRequest, before: str = "", after: str = "") -> Caught:
    """An action that redirects either way: a refusal becomes the error message the next page shows
    (`before` + its reasons + `after`)."""
    return Caught(lambda error: messages.error(request, f"{before}{error.reasons()}{after}"))


class RefusalMiddleware:
    """A refusal no view expected: its status, `Retry-After` and words, as JSON under /api/ (DRF's
    views answer theirs through api.errors) or as a page; a not-found one is Django's own 404."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ApplicationError):
            return None
        if exception.status == 404:  # Django's own not-found answer
            raise Http404(str(exception)) from exception
        if request.path.startswith("/api/"):
            body = exception.body(request.build_absolute_uri)
            return with_retry_after(JsonResponse(body, status=exception.status), exception)
        context = {"message": str(exception), "problems": exception.lines() if exception.located else []}
        return with_retry_after(render(request, "refused.html", context, status=exception.status), exception)
