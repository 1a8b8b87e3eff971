"""The API's token authentication: DRF's, except that with CAPBENCH_STAFF_2FA on a staff account's
token opens nothing (403). A token carries no two-factor code, and one issued before two-factor was
turned on (or taken from a session) would otherwise keep staff powers behind a password alone; the
token path never passes accounts.middleware, so the check is here. Staff use the API from a
verified web session instead (docs/security.md, "Staff two-factor")."""

from __future__ import annotations

from rest_framework import authentication
from rest_framework.exceptions import PermissionDenied

from accounts.services.two_factor import staff_verification_required

STAFF_TOKEN_REFUSED = "Staff use the site with two-factor: an API token does not open a staff account."


class TokenAuthentication(authentication.TokenAuthentication):
    def authenticate_credentials(self, key: str):
        user, token = super().authenticate_credentials(key)
        if staff_verification_required(user):
            raise PermissionDenied(STAFF_TOKEN_REFUSED)
        return user, token
