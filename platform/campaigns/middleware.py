"""Remembering where accounts act from, for the sock-puppet rule (campaigns.services.identity)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse

from campaigns.services.identity import address_seen
from plumbing.limits import client_address

log = logging.getLogger(__name__)
SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


class AccountAddressMiddleware:
    """After every signed-in request that changes something (an upload by the web form or the API,
    a token, an answer, a visibility change), the account's client address is remembered as a keyed
    digest. It is read after the view ran: the API authenticates tokens in its views, so only then is
    the account known. A database failure here is logged, never turned into an error page."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method not in SAFE:
            user = getattr(request, "user", None)
            if user is not None and user.is_authenticated:
                try:
                    address_seen(user_id=user.pk, address=client_address(request))
                except DatabaseError as error:
                    log.warning("the address of user %s was not remembered: %s", user.pk, error)
        return response
