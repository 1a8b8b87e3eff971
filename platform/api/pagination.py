"""Pagination whose parameters are bounded: no client value reaches the database unchecked."""

from __future__ import annotations

from django.db import connection, transaction
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination

from scoring.models import Score

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
    """Cursor pagination over scores in caption order (then metric version): the order the indexes
    give a dataset's or a system's scores in, so a page costs the same at any number of scores
    (api.views.ScoreViewSet). A cursor's position is a caption id; the scores of one caption (at
    most one per metric version) are told apart by DRF's offset. A cursor that does not decode, or
    whose position is not an id, is "Invalid cursor" (404, DRF's answer); its offset is capped by
    DRF (`offset_cutoff`); `?page_size=` at most `max_page_size` (a bad one means the default)."""

    ordering: tuple[str, ...] = ("caption_id", "metric_version_id")

    def paginate_queryset(self, queryset, request, view=None):
        # The index gives this order, but with a system and a caption range the planner multiplies
        # correlated selectivities, expects a hundred rows and sorts instead: a system's 125,000
        # scores, half a second at 10M (bench/scale.py --explain). Sorting is what a page never needs.
        cursor = self.decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            # DRF bounds the scores' caption_id; the captions' side of the join is bounded here, or
            # a late page would walk every caption before its position (ranges do not cross joins).
            queryset = queryset.extra(
                where=[f'"catalog_caption"."id" {"<=" if cursor.reverse else ">="} %s'], params=[int(cursor.position)]
            )
        with transaction.atomic(), connection.cursor() as database:
            database.execute("SET LOCAL enable_sort = off")
            page: list[Score] | None = super().paginate_queryset(queryset, request, view)  # (a list: the query ran)
            # SET LOCAL lasts until the outermost transaction ends, not this block when it is a
            # savepoint (a test's transaction): every later query would be planned without sorts,
            # at a cost past jit_above_cost, and JIT-compiled (0.1-0.5 s each). On an error the
            # block's rollback undoes the setting.
            database.execute("SET LOCAL enable_sort = on")
            return page

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


class CaptionCursor(ScoreCursor):
    """Cursor pages of captions in id order (the per-caption scores' `layout=wide`, one row per
    caption): a position is a caption id, read from the caption_dataset_order or
    caption_system_order index; the same bounds and checks as ScoreCursor."""

    ordering = ("id",)
    page_size = 100
    max_page_size = 1000

    def paginate_queryset(self, queryset, request, view=None):
        return CursorPagination.paginate_queryset(self, queryset, request, view)
