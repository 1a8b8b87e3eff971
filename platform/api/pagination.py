"""Pagination whose parameters are bounded: no client value reaches the database unchecked."""
from __future__ import annotations

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination

MAX_OFFSET = 10_000_000


class BoundedLimitOffset(LimitOffsetPagination):
    """`?limit=` at most `max_limit`; `?offset=` a whole number from 0 to 10 million (else 400)."""

    default_limit = 100
    max_limit = 1000

    def get_offset(self, request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw in (None, ""):
            return 0
        if not raw.isdigit() or int(raw) > MAX_OFFSET:
            raise ValidationError({self.offset_query_param: f"a whole number from 0 to {MAX_OFFSET:,}"})
        return int(raw)
