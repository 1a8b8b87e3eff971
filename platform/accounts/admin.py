"""Staff's view of two-factor devices. django-otp's own TOTP admin is replaced: it shows every
device's secret (its QR code) to any staff member, and its configuration page answers a device
that does not exist with a server error. Here staff see whose devices exist and may delete a lost
one (its owner enrols again from their account page); nobody reads or adds a secret here."""

from django.contrib import admin
from django_otp.plugins.otp_totp.models import TOTPDevice

if admin.site.is_registered(TOTPDevice):  # registered by django_otp.plugins.otp_totp, listed before us
    admin.site.unregister(TOTPDevice)


@admin.register(TOTPDevice)
class TOTPDeviceAdmin(admin.ModelAdmin):
    list_display = ("user", "name", "confirmed")
    fields = ("user", "name", "confirmed")
    readonly_fields = ("user", "name", "confirmed")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
