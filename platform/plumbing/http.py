"""Request types for the type checker."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedHttpRequest(HttpRequest):
    """The request a `@login_required` view receives: `request.user` is a signed-in User, never
    AnonymousUser. Only an annotation (django-stubs' advice); Django still passes an HttpRequest."""

    user: User
