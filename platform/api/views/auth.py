"""The API token: sign in by username and password, limited like the web form."""

from __future__ import annotations

from django.http import HttpResponse
from django.utils.decorators import method_decorator
from django.utils.translation import gettext_lazy as _
from django.views.decorators.cache import never_cache
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.lockout import attempt_refusal, attempt_succeeded, lockout_response
from accounts.services.two_factor import staff_verification_required
from api import documentation as shapes
from api.throttles import TokenRate


class Credentials(AuthTokenSerializer):
    """A password alone opens no staff account where staff need a two-factor code (CAPBENCH_STAFF_2FA):
    a staff account is answered exactly as a wrong password is (400, the same words), so the answer
    never confirms a staff password. Staff use the API from a verified web session (a staff token
    opens nothing then: api.authentication)."""

    def validate(self, attrs: dict) -> dict:
        attrs = super().validate(attrs)
        if staff_verification_required(attrs["user"]):
            # AuthTokenSerializer's own refusal of a wrong password, word for word.
            raise serializers.ValidationError(_("Unable to log in with provided credentials."), code="authorization")
        return attrs


@method_decorator(never_cache, name="dispatch")
class TokenView(ObtainAuthToken):
    """POST username and password for your API token: limited per address (`tokens`), and sign-in
    attempts per address and account as on the web form (accounts.lockout); never cached."""

    throttle_classes = [TokenRate]
    serializer_class = Credentials

    @extend_schema(
        summary="Your API token",
        request={
            "application/x-www-form-urlencoded": shapes.Credentials,
            "multipart/form-data": shapes.Credentials,
            "application/json": shapes.Credentials,
        },
        responses=shapes.Token,
    )
    # DRF's stubs say Response; APIView.finalize_response takes any HttpResponseBase, and the 429s are Django's.
    def post(self, request: Request, *args, **kwargs) -> Response | HttpResponse:  # type: ignore[override]
        username = request.data.get("username", "") if hasattr(request.data, "get") else ""
        username = username if isinstance(username, str) else ""
        refusal = attempt_refusal(request._request, username)
        if refusal is not None:
            return refusal
        try:
            response = super().post(request, *args, **kwargs)
        except ValidationError:
            if getattr(request, "axes_locked_out", False) or getattr(request._request, "axes_locked_out", False):
                return lockout_response(request._request, None, {"username": username})
            raise
        attempt_succeeded(username)
        return response
