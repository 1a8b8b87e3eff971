"""Two-factor sign-in for staff (docs/security.md, "Staff two-factor"): a time-based one-time code
(TOTP, RFC 6238) from an authenticator app, with django-otp's device model, its replay guard (a
code is taken once) and its throttle (each wrong code doubles the wait before the next is read).

With CAPBENCH_STAFF_2FA on (production's default), a staff account's session is a staff session
only once a code from its device has been given in it (accounts.middleware): until then it is sent
to the code page, and the admin, /ops/ and every staff view stay shut. One device per account:
enrolling again (from a verified session) replaces it."""

from __future__ import annotations

from base64 import b32encode

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django_otp.plugins.otp_totp.models import TOTPDevice

DEVICE_NAME = "authenticator app"


def staff_verification_required(user) -> bool:
    """Whether this user's session must carry a verified code (staff, with CAPBENCH_STAFF_2FA on)."""
    return bool(settings.CAPBENCH_STAFF_2FA and user.is_authenticated and user.is_staff)


def is_verified(user) -> bool:
    """Whether a code was given in this session (django_otp.middleware.OTPMiddleware sets it)."""
    check = getattr(user, "is_verified", None)
    return bool(check is not None and check())


def confirmed_device(user: User) -> TOTPDevice | None:
    return TOTPDevice.objects.filter(user=user, confirmed=True).order_by("-pk").first()


def enrolment_device(*, user: User) -> TOTPDevice:
    """The device being enrolled: a new secret, or the one shown before and not confirmed yet."""
    pending = TOTPDevice.objects.filter(user=user, confirmed=False).order_by("-pk").first()
    return pending or TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)


def enrolment_confirm(*, user: User, code: str) -> TOTPDevice | None:
    """Confirm the pending device with a code it shows: it becomes the account's device (any older
    one is removed). None when the code is wrong, or nothing is being enrolled."""
    with transaction.atomic():
        device = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=False).order_by("-pk").first()
        if device is None or not device.verify_token(_digits(code)):
            return None
        device.confirmed = True
        device.save(update_fields=["confirmed"])
        TOTPDevice.objects.filter(user=user).exclude(pk=device.pk).delete()
    return device


def code_verify(*, user: User, code: str) -> TOTPDevice | None:
    """The account's device when `code` is its current one (each code is taken once); else None."""
    with transaction.atomic():
        device = TOTPDevice.objects.select_for_update().filter(user=user, confirmed=True).order_by("-pk").first()
        if device is None or not device.verify_token(_digits(code)):
            return None
    return device


def _digits(code: str) -> str:
    return "".join(code.split())[:16]


def secret_text(device: TOTPDevice) -> str:
    """The secret as an authenticator app asks for it typed: base32, in groups of four."""
    text = b32encode(device.bin_key).decode()
    return " ".join(text[i : i + 4] for i in range(0, len(text), 4))
