"""What a captioner board request reads before any table is built: the dataset the viewer may see,
its snapshot's version and digests, and the systems the viewer may see (catalog.visibility), in one
query; the board's validator (leaderboards.caching) and the board itself are made from them."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser
from django.contrib.postgres.aggregates import ArrayAgg
from django.db.models import F, OuterRef, QuerySet, Subquery

from catalog.models import Dataset, System


@dataclass(frozen=True)
class BoardRequestState:
    """What a board request's validator is made from, read live in one query."""

    dataset: Dataset
    version: str | None  # when the snapshot was built (ISO text): None while the dataset has none
    visible: frozenset[int]  # systems_visible(dataset, viewer)
    digests: dict  # the snapshot's snapshots.payload_digests ({} when it has none yet)


def board_request_state(slug: str, viewer) -> BoardRequestState:
    """The dataset `viewer` may see by `slug` (Dataset.DoesNotExist otherwise), its snapshot's
    version and digests, and the ids of its systems `viewer` may see (catalog.visibility): one
    query, the same rules as Dataset.objects.visible_to and systems_visible. For an anonymous viewer
    the query's SQL is built once per process (_anonymous_board_sql)."""
    if viewer is None or not viewer.is_authenticated:
        sql, params, at = _anonymous_board_sql()
        found = list(Dataset.objects.raw(sql, [*params[:at], slug, *params[at + 1 :]]))
    else:
        found = list(_board_state_queryset(slug, viewer)[:1])
    if not found:
        raise Dataset.DoesNotExist(slug)
    dataset = found[0]
    computed = dataset.board_computed_at  # type: ignore[attr-defined]  # (annotations)
    ids = dataset.visible_ids  # type: ignore[attr-defined]
    digests = dataset.board_digests or {}  # type: ignore[attr-defined]
    if isinstance(digests, str):  # (a raw query's JSON column comes as text)
        digests = json.loads(digests)
    return BoardRequestState(dataset, None if computed is None else computed.isoformat(), frozenset(ids or ()), digests)


def _board_state_queryset(slug: str, viewer) -> QuerySet[Dataset]:
    visible = (
        System.objects.visible_to(viewer)
        .filter(dataset=OuterRef("pk"))
        .order_by()
        .values("dataset")
        .annotate(ids=ArrayAgg("id"))
        .values("ids")
    )
    return (
        Dataset.objects.visible_to(viewer)
        .annotate(
            board_computed_at=F("board_snapshot__computed_at"),
            board_digests=F("board_snapshot__digests"),
            visible_ids=Subquery(visible),
        )
        .filter(slug=slug)
        .order_by()
    )


_SLUG = "\x00slug\x00"  # stands for the slug while the SQL is built (no real slug holds a NUL)


@functools.cache
def _anonymous_board_sql() -> tuple[str, tuple, int]:
    """board_request_state's query for an anonymous viewer, as Django builds it from the visibility
    rule: its SQL, its parameters and where the slug goes among them. Building it costs more than
    running it; it is the same for every anonymous request."""
    sql, params = _board_state_queryset(_SLUG, AnonymousUser()).query.sql_with_params()
    if list(params).count(_SLUG) != 1:
        raise RuntimeError("the board query's slug parameter could not be located")
    return sql, tuple(params), list(params).index(_SLUG)


def systems_visible(dataset: Dataset, viewer) -> set[int]:
    """Ids of the dataset's systems `viewer` may see (catalog.visibility, read live)."""
    return set(System.objects.visible_to(viewer).filter(dataset=dataset).order_by().values_list("id", flat=True))
