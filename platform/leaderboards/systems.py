"""A system's page: what it is, who submitted it and when, and each of its board numbers with its
interval and its rank among the systems the viewer may see (the board's own rows), then the
metrics this server does not compute, named once."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Max

from catalog.models import Dataset, System
from leaderboards.captioner import PEOPLE, BoardRow, Cell, PeopleColumn, captioner_board_page, rank_rows, sort_rows
from leaderboards.columns import Column
from leaderboards.snapshots import board_payload
from scoring.models import Metric, SystemScore
from scoring.wording import not_computed_here
from submissions.integrity import Flag


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
    unavailable: list[Column] = field(default_factory=list)  # metrics not computed here, without a number
    not_computed_here: str = ""  # those in one line, grouped by what is missing (scoring.wording)

    @property
    def submission(self):
        return getattr(self.system, "submission", None)

    @property
    def flags(self) -> tuple[Flag, ...]:
        """What its submission's integrity checks found, as the board row shows it to this viewer."""
        return self.row.submission.flags if self.row is not None and self.row.submission is not None else ()


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
        if _not_computed_here(column, page.row.cell(column.slug)):
            page.unavailable.append(column)
            continue
        page.numbers.append(_number(column, column.slug, rows, page.row, column.higher_is_better))
    page.numbers.sort(key=lambda number: number.cell.state != "value")  # its numbers first, then what has none
    needs = dict(Metric.objects.filter(slug__in=[c.slug for c in page.unavailable]).values_list("slug", "needs"))
    page.not_computed_here = not_computed_here((c.name, needs.get(c.slug) or ()) for c in page.unavailable)
    return page


def _not_computed_here(column: Column, cell: Cell | None) -> bool:
    """A metric this server does not compute and that has no number for the system: listed apart,
    once, not as a row of the table."""
    has_number = cell is not None and cell.state == "value"
    return not has_number and (not column.available or (cell is not None and cell.state == "unavailable"))


def _number(column: Column | None, key: str, rows: list[BoardRow], mine: BoardRow, higher: bool) -> SystemNumber:
    ordered = sort_rows(list(rows), key, higher)
    rank_rows(ordered, key)
    ranked = sum(1 for row in ordered if row.rank is not None)
    cell = mine.cell(key) or Cell()
    return SystemNumber(column, cell, mine.rank, ranked)
