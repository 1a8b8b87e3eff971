"""A system's page: what it is, who submitted it and when, and each of its board numbers with its
interval and its rank among the systems the viewer may see (the board's own rows)."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Max

from catalog.models import Dataset, System
from leaderboards.captioner import PEOPLE, BoardRow, Cell, PeopleColumn, captioner_board_page, rank_rows, sort_rows
from leaderboards.columns import Column
from leaderboards.snapshots import board_payload
from scoring.models import SystemScore


@dataclass(frozen=True)
class SystemNumber:
    column: Column | None  # None: the people column
    cell: Cell
    rank: int | None
    ranked: int  # systems with a number in this column


@dataclass
class SystemPage:
    system: System
    row: BoardRow | None  # None when the board does not rank this system (a caption source)
    numbers: list[SystemNumber] = field(default_factory=list)
    people: PeopleColumn | None = None  # what the people column shows and whose ratings it is made of
    scored_at: object = None
    compare_with: str | None = None  # the board's top system (or the next, when this is it)

    @property
    def submission(self):
        return getattr(self.system, "submission", None)


def system_page(dataset: Dataset, system: System, *, viewer) -> SystemPage:
    """The system's row of the board as `viewer` sees it (captioner.captioner_board_page): every
    number as the board shows it, each ranked among the systems the viewer sees."""
    board = captioner_board_page(dataset, {}, viewer=viewer, payload=board_payload(dataset))
    columns, rows = board.columns, board.rows
    page = SystemPage(system, next((row for row in rows if row.system.id == system.pk), None))
    page.scored_at = SystemScore.objects.filter(system=system).aggregate(at=Max("computed_at"))["at"]
    others = [row for row in rows if row.system.id != system.pk]
    page.compare_with = others[0].system.slug if others else None
    if page.row is None:
        return page
    if page.row.people is not None:
        page.people = board.people
        page.numbers.append(_number(None, PEOPLE, rows, page.row, True))
    for column in sorted(columns, key=lambda c: (c.family, c.name.lower())):
        page.numbers.append(_number(column, column.slug, rows, page.row, column.higher_is_better))
    page.numbers.sort(key=lambda number: number.cell.state != "value")  # its numbers first, then what has none
    return page


def _number(column: Column | None, key: str, rows: list[BoardRow], mine: BoardRow, higher: bool) -> SystemNumber:
    ordered = sort_rows(list(rows), key, higher)
    rank_rows(ordered, key)
    ranked = sum(1 for row in ordered if row.rank is not None)
    cell = mine.cell(key) or Cell()
    return SystemNumber(column, cell, mine.rank, ranked)
