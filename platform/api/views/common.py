"""What the API's views share: the staff-only write permission, the download renderers and their
negotiation, and the Vary header of an answer whose format is negotiated."""

from __future__ import annotations

import json
from typing import TypeVar

from django.http import HttpResponse
from django.utils.cache import patch_vary_headers
from rest_framework import permissions
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


class IsStaffOrReadOnly(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return request.method in permissions.SAFE_METHODS or bool(request.user and request.user.is_staff)


class _Download(BaseRenderer):
    """A download's format for DRF's negotiation (`?format=`, the `.csv` suffix, Accept). The
    download itself is streamed past the renderer; only an error body (a dict) is rendered, as JSON."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return json.dumps(data).encode()


class JsonLinesRenderer(_Download):
    media_type = "application/x-ndjson"
    format = "jsonl"


class CsvRenderer(_Download):
    media_type = "text/csv"
    format = "csv"


class DownloadNegotiation(DefaultContentNegotiation):
    """`?format=` or the suffix choose the format, whatever Accept says; without either, an Accept
    that names none of the formats (a client asking for JSON of a download) gets the first rather
    than a 406."""

    def select_renderer(self, request, renderers, format_suffix=None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            chosen = format_suffix or request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
            renderer = next((r for r in renderers if r.format == chosen), renderers[0])
            return renderer, renderer.media_type


R = TypeVar("R", bound=HttpResponse)


def api_headers(response: R) -> R:
    """The API negotiates its format from Accept: a cache must keep one copy per Accept."""
    patch_vary_headers(response, ["Accept"])
    return response
