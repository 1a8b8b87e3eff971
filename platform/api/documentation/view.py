"""The schema's view: the OpenAPI document drawn once per process for each URLconf, version and
language, not on every request. It is the code's, the same for every requester (drf-spectacular's
SERVE_PUBLIC: no endpoint is left out for who asks), and drawing it took 0.35 s of the web process
per request to /api/v1/schema/ (the security crawls asked for it 57 times). Eight drawings are
kept at most: `?lang=` is the requester's to choose."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from django.urls import get_urlconf
from django.utils import translation
from drf_spectacular.views import SpectacularAPIView
from rest_framework.response import Response

KEPT = 8
_drawn: OrderedDict[tuple, dict[str, Any]] = OrderedDict()
_lock = threading.Lock()


class SchemaView(SpectacularAPIView):
    def _get_schema_response(self, request) -> Response:
        version = self.api_version or request.version or self._get_version_parameter(request)
        key = (get_urlconf(), str(self.urlconf), version, translation.get_language())
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
