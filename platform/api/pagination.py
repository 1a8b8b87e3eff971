"""Pagination whose parameters are bounded: no client value reaches the database unchecked."""

from __future__ import annotations

from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination

MAX_OFFSET = 10_000_000
# The largest value of a PostgreSQL bigint (every primary key here is a BigAutoField).
MAX_ID = 2**63 - 1


def _whole_number(raw: str, largest: int) -> int | None:
    """`raw` as an integer from 0 to `largest`, or None: ASCII digits only (no sign, no space, no
    "²" or "٣" that str.isdigit() accepts) and never a string long enough to make int() refuse it."""
    if not raw or len(raw) > len(str(largest)) or not (raw.isascii() and raw.isdigit()):
        return None
    value = int(raw)
    return value if value <= largest else None


class BoundedLimitOffset(LimitOffsetPagination):
    """`?limit=` at most `max_limit`; `?offset=` a whole number from 0 to 10 million (else 400)."""

    default_limit = 100
    max_limit = 1000

    def get_offset(self, request) -> int:
        raw = request.query_params.get(self.offset_query_param)
        if raw in (None, ""):
            return 0
        offset = _whole_number(raw, MAX_OFFSET)
        if offset is None:
            raise ValidationError({self.offset_query_param: f"a whole number from 0 to {MAX_OFFSET:,}"})
        return offset


class ScoreCursor(CursorPagination):
    """Cursor pagination over a queryset ordered by `id`. A cursor that does not decode, or whose
    position is not an id, is "Invalid cursor" (404, DRF's answer); its offset is capped by DRF
    (`offset_cutoff`); `?page_size=` at most `max_page_size` (a bad one means the default)."""

    ordering = "id"
    page_size = 500
    page_size_query_param = "page_size"
    max_page_size = 5000

    def decode_cursor(self, request) -> Cursor | None:
        cursor = super().decode_cursor(request)
        if cursor is None or cursor.position is None:
            return cursor
        # DRF decodes the position as the query string's text (its stubs say int): str() changes nothing.
        if _whole_number(str(cursor.position), MAX_ID) is None:
            raise NotFound(self.invalid_cursor_message)
        return cursor
