"""The owner's two actions on an owned upload over the API, for every kind (catalog.uploads): POST
`visibility` (`public`: true or false) and POST `withdraw`. A viewset names its `kind` and answers
with its own serializer; a refusal is answered by api.errors."""

from __future__ import annotations

from typing import ClassVar

from django.contrib.auth.models import User
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated, NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from api import documentation as shapes
from api.throttles import ActionRate
from catalog.uploads.models import OwnedUpload
from catalog.uploads.services import UploadKind, upload_visibility_set, upload_withdraw


class UploadActions(viewsets.GenericViewSet):
    kind: ClassVar[UploadKind]

    def get_throttles(self):
        """The owner's changes count against the `actions` limit, whichever viewset carries them."""
        changes = [ActionRate()] if self.action in ("visibility", "withdraw") else []
        return [*super().get_throttles(), *changes]

    @extend_schema(
        request={
            "multipart/form-data": shapes.Visibility,
            "application/x-www-form-urlencoded": shapes.Visibility,
            "application/json": shapes.Visibility,
        },
    )
    @action(detail=True, methods=["post"])
    def visibility(self, request: Request, pk: str) -> Response:
        data = request.data if isinstance(request.data, dict) else {}
        public = str(data.get("public")).lower() in ("1", "true", "yes", "on")
        upload = upload_visibility_set(upload=self._own(request, pk), is_public=public, kind=self.kind)
        return Response(self.get_serializer(upload).data)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        upload = upload_withdraw(upload=self._own(request, pk), kind=self.kind)
        return Response(self.get_serializer(upload).data)

    def _own(self, request: Request, pk: str) -> OwnedUpload:
        """The caller's own upload of this kind; 404 for anyone else's, as for none."""
        if not isinstance(request.user, User):
            raise NotAuthenticated()
        found = self.kind.model.objects.filter(pk=int(pk), owner=request.user).first() if pk.isdigit() else None
        if found is None:
            raise NotFound()
        return found
