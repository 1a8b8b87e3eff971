"""Staff two-factor (accounts.services.two_factor): with CAPBENCH_STAFF_2FA on, a staff account
signed in with its password alone is sent to the code page from every page but the few that let it
give a code, enrol a device or sign out; an API request made with that session is refused (403).
Staff powers reach far (every private submission, the admin, /ops/, freezing snapshots), so none is
left to a password alone. Installed after django_otp.middleware.OTPMiddleware, which reads the
session's verified device."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.urls import reverse

from accounts.services.two_factor import is_verified, staff_verification_required

# What an unverified staff session may still open (static files never reach Django).
OPEN = ("/accounts/two-factor/", "/accounts/login/", "/accounts/logout/", "/healthz")


class StaffTwoFactorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        if staff_verification_required(user) and not is_verified(user) and not request.path.startswith(OPEN):
            if request.path.startswith("/api/"):
                message = (
                    "This staff session needs two-factor verification: give your code at /accounts/two-factor/verify/."
                )
                return JsonResponse({"detail": message}, status=403)
            target = reverse("accounts:two_factor_verify") + "?" + urlencode({"next": request.get_full_path()})
            return redirect(target)
        return self.get_response(request)
