"""The captioner board as one typed page model (CaptionerBoardPage): systems × metrics from the
dataset's snapshot (or a subset's), the rows a viewer may see, sorted and ranked, with the people
column and what it is made of. The page, its downloads, the API, the citable snapshots, the system
page and the `capbench` client all read this model (through exports.board_json for the last three),
so a number is the same wherever it is shown. Sorting puts missing and failed values last."""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from catalog.models import Dataset
from catalog.visibility import references_visible
from leaderboards.columns import Column
from leaderboards.requests import systems_visible
from leaderboards.snapshots import board_payload
from scoring.shown import Shown
from submissions.integrity import Flag, flags_shown


@dataclass
class Cell:
    value: float | None = None
    state: str = "missing"  # value | missing | queued | running | failed | unavailable
    note: str = ""
    rank: int | None = None
    low: float | None = None  # the 95% interval (images resampled), on the value's scale
    high: float | None = None
    scale: float = 1.0  # what the value is multiplied by where people read it (the column's points)
    signature: str = ""  # its metric version's, where not its column's (scoring.signatures)

    @property
    def sort_value(self) -> float | None:
        """The value when it can be sorted: None when missing or NaN."""
        return None if self.value is None or math.isnan(self.value) else self.value

    @property
    def sortable(self) -> bool:
        return self.sort_value is not None

    @property
    def shown(self) -> Shown:
        """The number as pages and the API give it (native and points, scoring.shown)."""
        return Shown(self.value if self.state == "value" else None, self.low, self.high, self.scale)


@dataclass(frozen=True)
class SystemInfo:
    id: int
    slug: str
    name: str
    kind: str
    is_baseline: bool


@dataclass(frozen=True)
class SubmissionInfo:
    """Who submitted a system, when, with what: the board row's second line and its API fields."""

    id: int
    paper_url: str
    code_url: str
    is_public: bool
    owner_id: int
    submitter: str = ""  # the owner's user name, the name the site shows of an account
    submitted_at: str = ""  # ISO 8601, UTC
    flags: tuple[Flag, ...] = ()  # what its integrity checks found that this viewer may read

    @property
    def submitted_on(self) -> str:
        return self.submitted_at[:10]

    @classmethod
    def of(cls, stored: dict, *, references_shown: bool) -> SubmissionInfo:
        """From a snapshot's row, its flags as the viewer may read them (submissions.integrity.flags_shown)."""
        flags = tuple(flags_shown(stored.get("flags"), references_shown=references_shown))
        return cls(**{**stored, "flags": flags})


@dataclass
class BoardRow:
    system: SystemInfo
    cells: dict[str, Cell] = field(default_factory=dict)
    submission: SubmissionInfo | None = None
    people: Cell | None = None  # the mean human rating of its captions, where the dataset has them
    rank: int | None = None  # by the sorted column's goodness (1 = best; ties share), None without a value

    def cell(self, key: str) -> Cell | None:
        return self.people if key == PEOPLE else self.cells.get(key)


@dataclass(frozen=True)
class PeopleColumn:
    """What the people column shows and whose ratings it is made of: the dataset's imported
    judgments (`source` "judgments"), or a live campaign an organiser chose for the board
    (campaigns.selectors.board_people): `who` rated, how many `ratings` (or comparisons), and their
    agreement (Krippendorff's α with its interval; None with `alpha_note` saying why)."""

    label: str  # the judgment dimension, or the campaign's label
    source: str
    who: str
    ratings: int
    alpha: Shown | None = None
    alpha_note: str = ""
    campaign: dict | None = None  # slug, title, mode

    @property
    def counted(self) -> str:
        return f"{self.ratings:,}"

    @classmethod
    def of(cls, payload: dict) -> PeopleColumn | None:
        label = payload.get("people")
        if not label:
            return None
        found = payload.get("people_source") or {}
        alpha = found.get("alpha")
        return cls(
            label,
            found.get("source", "campaign" if payload.get("people_campaign") else "judgments"),
            found.get("who", ""),
            int(found.get("ratings") or 0),
            None if not alpha else Shown(alpha.get("value"), alpha.get("low"), alpha.get("high")),
            found.get("alpha_note", ""),
            payload.get("people_campaign"),
        )


PEOPLE = "people"  # the sort key of the people column (no metric has this slug: metric slugs are the registry's)
FILTERS = ("baseline", "paper", "code")  # the board's system filters (?only=…)


@dataclass(frozen=True)
class CaptionerBoardQuery:
    sort: str | None = None  # a column's slug or PEOPLE; None: the dataset's headline metric
    descending: bool | None = None  # None: each column's goodness (best first)
    search: str = ""  # part of a system's name
    only: str | None = None  # one of FILTERS


def captioner_board_params(params) -> CaptionerBoardQuery:
    """The captioner board's query string as the page and the API read it: `?sort=<metric slug or
    people>&order=asc|desc&q=<part of a name>&only=baseline|paper|code`. Another order reads as
    none (best first), another filter as none."""
    order = params.get("order")
    return CaptionerBoardQuery(
        sort=params.get("sort") or None,
        descending=None if order not in ("asc", "desc") else order == "desc",
        search=(params.get("q") or "").strip()[:100],
        only=params.get("only") if params.get("only") in FILTERS else None,
    )


@dataclass
class CaptionerBoardPage:
    """One captioner board as a viewer is shown it: every column, the rows they may see (sorted,
    ranked, then searched and filtered), the key they are ranked by, the people column and the
    subset of images its numbers are over (None: all)."""

    dataset: Dataset
    columns: list[Column]
    rows: list[BoardRow]
    sort: str | None
    query: CaptionerBoardQuery
    people: PeopleColumn | None = None
    subset: str | None = None
    people_pending: str = ""  # a campaign chosen for the people column that is not eligible yet, why

    @property
    def best_first(self) -> bool:
        """Whether the rows run from the best down (the sorted column's goodness)."""
        if self.sort is None or self.query.descending is None:
            return True
        return self.query.descending == self.higher_is_better(self.sort)

    def higher_is_better(self, key: str) -> bool:
        return True if key == PEOPLE else next(c.higher_is_better for c in self.columns if c.slug == key)

    @property
    def sort_name(self) -> str:
        return "people" if self.sort == PEOPLE else next((c.name for c in self.columns if c.slug == self.sort), "")

    @property
    def flagged(self) -> bool:
        """Whether a row shown has an integrity flag (the page then says what the mark means)."""
        return any(row.submission is not None and row.submission.flags for row in self.rows)

    @property
    def people_first(self) -> bool:
        """What people said leads where most systems have it (a human-evaluation board)."""
        return self.people is not None and 2 * sum(1 for row in self.rows if row.people) > len(self.rows)

    @property
    def compare_default(self) -> tuple[str, str] | None:
        """The board's top system and its best baseline (else its second system), to compare."""
        if len(self.rows) < 2:
            return None
        top = self.rows[0]
        other = next((row for row in self.rows[1:] if row.system.is_baseline), self.rows[1])
        return top.system.slug, other.system.slug


def captioner_board_page(
    dataset: Dataset,
    params,
    *,
    viewer=None,
    visible: AbstractSet[int] | None = None,
    payload: dict | None = None,
    subset: str | None = None,
) -> CaptionerBoardPage:
    """The board of `payload` (the dataset's snapshot, or a subset's: leaderboards.subsets) as
    `viewer` is shown it for the query string `params` (captioner_board_params)."""
    if payload is None:
        payload = board_payload(dataset)
    query = captioner_board_params(params)
    columns, rows, key = _board_rows(
        dataset,
        sort=query.sort,
        descending=query.descending,
        viewer=viewer,
        visible=visible,
        payload=payload,
        search=query.search,
        only=query.only,
    )
    people = PeopleColumn.of(payload) if any(row.people for row in rows) else None
    if people is not None and people.alpha is not None and not references_visible(dataset, viewer):
        # A hidden test set's agreement between annotators is staff's, as the campaign's own is.
        people = replace(people, alpha=None, alpha_note="withheld on a hidden test set")
    pending = (payload.get("people_source") or {}).get("pending", "")
    return CaptionerBoardPage(dataset, columns, rows, key, query, people, subset, pending)


def captioner_board(
    dataset: Dataset,
    *,
    sort: str | None = None,
    descending: bool | None = None,
    viewer=None,
    visible: AbstractSet[int] | None = None,
    payload: dict | None = None,
    search: str = "",
    only: str | None = None,
) -> tuple[list[Column], list[BoardRow]]:
    """The board from the dataset's precomputed snapshot (`payload`, when the caller has read it),
    keeping the systems `viewer` may see (catalog.visibility, read live: a change of visibility
    shows at once; `visible`: those ids, when the caller has already read them for the same viewer)
    whose name holds `search` and that pass the filter `only`, sorted by `sort` (default: the
    dataset's headline metric, else the first column with a number) with ranks by goodness:
    `descending` against the column's direction lists the worst first, still ranked from the best."""
    columns, rows, _ = _board_rows(
        dataset,
        sort=sort,
        descending=descending,
        viewer=viewer,
        visible=visible,
        payload=payload,
        search=search,
        only=only,
    )
    return columns, rows


def _board_rows(
    dataset: Dataset,
    *,
    sort: str | None,
    descending: bool | None,
    viewer,
    visible: AbstractSet[int] | None,
    payload: dict | None,
    search: str,
    only: str | None,
) -> tuple[list[Column], list[BoardRow], str | None]:
    """captioner_board, and the key the rows are ranked by (None when no row has a number)."""
    if payload is None:
        payload = board_payload(dataset)
    columns = [Column(**column) for column in payload["columns"]]
    scale = {column.slug: column.points for column in columns}
    if visible is None:
        visible = systems_visible(dataset, viewer)
    ordered = []
    # A hidden test set's human ratings are for staff only, its systems' mean ratings too (catalog.visibility);
    # a live campaign's are public, as on its own page (campaigns.selectors.campaign_results).
    references_shown = references_visible(dataset, viewer)
    ratings_shown = references_shown or bool(payload.get("people_campaign"))
    for row in payload["rows"]:
        if row["system"]["id"] not in visible:
            continue
        submission = (
            SubmissionInfo.of(row["submission"], references_shown=references_shown) if row["submission"] else None
        )
        cells = {slug: Cell(**cell, scale=scale.get(slug, 1.0)) for slug, cell in row["cells"].items()}
        people = Cell(**row["people"]) if row.get("people") and ratings_shown else None
        ordered.append(BoardRow(SystemInfo(**row["system"]), cells, submission, people))
    # Sorted and ranked among every system the viewer sees, then searched and filtered: a system
    # found by its name keeps its place on the whole board.
    key = board_sort(dataset, columns, ordered, sort)
    if key is not None:
        better = True if key == PEOPLE else next(c.higher_is_better for c in columns if c.slug == key)
        ordered = sort_rows(ordered, key, better)
        rank_rows(ordered, key)
        if descending is not None and descending != better:  # the worst first; ranks stay by goodness
            valued = [row for row in ordered if row.rank is not None]
            valued.sort(key=lambda row: (-(row.rank or 0), row.system.name.lower()))  # ties still in name order
            ordered = valued + ordered[len(valued) :]
    return columns, [row for row in ordered if _passes(row, search.casefold(), only)], key


def _passes(row: BoardRow, needle: str, only: str | None) -> bool:
    """Whether a row's system name holds `needle` and it passes the filter `only` (FILTERS)."""
    if needle and needle not in row.system.name.casefold():
        return False
    if only == "baseline":
        return row.system.is_baseline
    if only in ("paper", "code"):
        return bool(row.submission and getattr(row.submission, f"{only}_url"))
    return True


def board_sort(dataset: Dataset, columns: list[Column], rows: list[BoardRow], sort: str | None) -> str | None:
    """The key a board is sorted by: `sort` when it names a column (or the people column where the
    rows have one), else the dataset's headline metric when a row has a number for it, else the
    first column with a number; None when no row has any."""
    slugs = [c.slug for c in columns]
    has_people = any(row.people is not None for row in rows)
    if sort in slugs or sort == PEOPLE and has_people:
        return sort
    valued = [slug for slug in slugs if any(row.cells[slug].sortable for row in rows)]
    if dataset.headline_metric in valued:
        return dataset.headline_metric
    return valued[0] if valued else None


def sort_rows(rows: list[BoardRow], key: str, descending: bool) -> list[BoardRow]:
    """Values in order; then every row without a value (failed, missing, running) in name order."""
    keyed = [(cell.sort_value if (cell := row.cell(key)) else None, row) for row in rows]
    valued = [(value, row) for value, row in keyed if value is not None]
    rest = [row for value, row in keyed if value is None]
    valued.sort(key=lambda pair: (-pair[0] if descending else pair[0], pair[1].system.name.lower()))
    return [row for _, row in valued] + sorted(rest, key=lambda row: row.system.name.lower())


def rank_rows(rows: list[BoardRow], key: str) -> None:
    """Standard competition ranking (1, 2, 2, 4) of the rows (sorted best first) that have a value
    under `key`; others get none."""
    previous, rank = None, 0
    for position, row in enumerate(rows, start=1):
        cell = row.cell(key)
        if cell is None or not cell.sortable:
            row.rank = None
            continue
        if cell.value != previous:
            rank, previous = position, cell.value
        row.rank = rank
        if key != PEOPLE:
            cell.rank = rank
