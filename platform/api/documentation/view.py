"""The schema's view: the OpenAPI document drawn once per process, not on every request. It is the
code's, the same for every requester: drf-spectacular's SERVE_PUBLIC (no endpoint left out for who
asks; a view set to serve_public=False draws it every time, as drf-spectacular does), and in
English only: the API has no versions and CapBench ships no translations, so `?version=` and
`?lang=` are ignored (drf-spectacular would put the first in a header and load a catalogue for
every language asked). Drawing it took 0.35 s of the web process per request to /api/v1/schema/.

The kept document is shared by every response: nothing may change it (DRF's renderers only read
it). Kept per URLconf and view, eight at most; forgotten when a setting changes (a test's
override_settings)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.urls import get_urlconf
from drf_spectacular.settings import patched_settings
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.response import Response

KEPT = 8
_drawn: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


class SchemaView(SpectacularAPIView):
    # The schema's own operation, as drf-spectacular's, without its `lang` parameter (ignored here).
    @extend_schema(**{key: value for key, value in SCHEMA_KWARGS.items() if key != "parameters"})
    def get(self, request, *args, **kwargs) -> Response:
        if not self._kept():
            return super().get(request, *args, **kwargs)
        with patched_settings(self.custom_settings):
            return self._get_schema_response(request)

    def _kept(self) -> bool:
        """False for a schema drawn for who asks (not public) or from a list of URLconfs: drawn
        every time, as drf-spectacular does."""
        return self.serve_public and not isinstance(self.urlconf, list | tuple)

    def _get_version_parameter(self, request) -> None:
        return None  # (drf-spectacular's reads ?version= as given, and writes it into a header)

    def _get_schema_response(self, request) -> Response:
        if not self._kept():
            return super()._get_schema_response(request)
        version = self.api_version or request.version
        key = (get_urlconf(), type(self), str(self.urlconf), id(self.patterns), repr(self.custom_settings), version)
        with _lock:
            schema = _drawn.get(key)
            if schema is not None:
                _drawn.move_to_end(key)
        if schema is None:
            generator = self.generator_class(urlconf=self.urlconf, api_version=version, patterns=self.patterns)
            schema = generator.get_schema(request=request, public=self.serve_public)
            with _lock:
                _drawn[key] = schema
                while len(_drawn) > KEPT:
                    _drawn.popitem(last=False)
        filename = self._get_filename(request, version)
        return Response(data=schema, headers={"Content-Disposition": f'inline; filename="{filename}"'})


@receiver(setting_changed)
def _forget(**kwargs: object) -> None:
    with _lock:
        _drawn.clear()
