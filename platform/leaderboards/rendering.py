"""The captioner board's rows as HTML, built in Python: 200 systems × 40 metrics are 8,000 cells,
which Django's template engine renders ten times slower. Every piece of user text is escaped.

Numbers are shown as papers report them (×Column.points: 0–1 metrics ×100) with their 95%
interval in small text under them; a cell without a number says why in plain words (the job's own
error, which may name the server's paths and settings, only for staff)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from leaderboards.captioner import FILTERS, PEOPLE, BoardRow, CaptionerBoardPage, Cell, SubmissionInfo
from leaderboards.columns import Column
from scoring.shown import points_text
from scoring.wording import unavailable_words

STATE_WORDS = {
    "missing": ("—", "not scored"),
    "queued": ("…", "waiting to be scored"),
    "running": ("…", "being scored"),
    "failed": ("failed", "could not be scored"),
    "unavailable": ("n/a", unavailable_words()),
}


def metric_value(value: float | None) -> str:
    """A raw number (per-caption scores, correlations): 4 decimals, 2 from 10 up."""
    if value is None:
        return "—"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


def points(value: float | None, scale: float) -> str:
    """A number as papers report it: ×scale, one decimal (two below 10 on a ×1 scale; scoring.shown)."""
    return points_text(value, scale)


def cell_html(cell: Cell | None, scale: float, *, staff: bool, extra: str = "") -> str:
    if cell is None:
        return f'<td class="num state-missing"{extra}>—</td>'
    if cell.state == "value" and cell.value is not None:
        interval = ""  # (none where fewer than two images were drawn from: the system page says so)
        if cell.low is not None and cell.high is not None:
            interval = f'<small class="interval">{points(cell.low, scale)}–{points(cell.high, scale)}</small>'
        if cell.signature:  # a number of another version than its column's (being replaced)
            extra += f' title="computed with {escape(cell.signature)}"'
        return f'<td class="num state-value"{extra}>{points(cell.value, scale)}{interval}</td>'
    text, words = STATE_WORDS.get(cell.state, (cell.state, cell.state))
    title = cell.note if staff and cell.note else words
    return f'<td class="num state-{escape(cell.state)}" title="{escape(title)}"{extra}>{escape(text)}</td>'


def board_rows_html(
    columns: list[Column],
    empty: list[Column],
    rows: list[BoardRow],
    *,
    people: str | None,
    staff: bool,
    dataset_slug: str,
) -> SafeString:
    """One <tr> per row: rank, the system (a row header linking to its page), the `columns` with
    numbers, then the `empty` ones (hidden until asked for); the people column "first" (before the
    metrics) or "last" (after those with numbers), or none."""
    parts = []
    for row in rows:
        link = reverse("leaderboards:system", args=[dataset_slug, row.system.slug])
        name = f'<a href="{escape(link)}">{escape(row.system.name)}</a>'
        if row.system.is_baseline:
            name += ' <span class="badge">baseline</span>'
        if isinstance(row.submission, SubmissionInfo):  # BoardRow.submission is one or None
            name += submission_html(row.submission)
        human = [cell_html(row.people, 1, staff=staff, extra=' data-metric="people"')] if people else []
        cells = human if people == "first" else []
        cells += [
            cell_html(row.cells[c.slug], c.points, staff=staff, extra=f' data-metric="{escape(c.slug)}"')
            for c in columns
        ]
        cells += human if people == "last" else []
        cells += [
            cell_html(row.cells[c.slug], c.points, staff=staff).replace('<td class="', '<td class="empty-metric ', 1)
            for c in empty
        ]
        rank = "" if row.rank is None else str(row.rank)
        parts.append(
            f'<tr><td class="num board-rank">{rank}</td><th scope="row" class="system">{name}</th>{"".join(cells)}</tr>'
        )
    return mark_safe("\n".join(parts))  # noqa: S308  (every interpolated value above is escaped)


def submission_html(submission: SubmissionInfo) -> str:
    """What follows a submitted system's name: its badges (private; flagged, with what its
    integrity checks found as the badge's title), then a second line in small text: who submitted
    it, when, and its paper and code links."""
    badges = ""
    if not submission.is_public:
        badges += ' <span class="badge private">private</span>'
    if submission.flags:
        found = "; ".join(flag.words for flag in submission.flags)
        labels = ", ".join(flag.label for flag in submission.flags)
        title = f"Flagged by the integrity checks at upload (a warning, not a verdict): {found}."
        badges += f' <span class="badge flagged" title="{escape(title)}">⚑ {escape(labels)}</span>'
    meta = []
    if submission.submitter:
        meta.append(f"by {escape(submission.submitter)}")
    if submission.submitted_on:
        meta.append(f'<time datetime="{escape(submission.submitted_at)}">{escape(submission.submitted_on)}</time>')
    if submission.paper_url:
        meta.append(f'<a href="{escape(submission.paper_url)}" rel="noopener nofollow">paper</a>')
    if submission.code_url:
        meta.append(f'<a href="{escape(submission.code_url)}" rel="noopener nofollow">code</a>')
    line = f'<small class="system-meta">{" · ".join(meta)}</small>' if meta else ""
    return badges + line


@dataclass(frozen=True)
class Header:
    slug: str
    name: str
    title: str  # what the column is, for a tooltip
    goodness: str  # "higher is better" / "lower is better"
    href: str  # sorting by it (best first), or reversed when it is the sorted column
    aria_sort: str  # ascending / descending / none
    empty: bool = False


def headers(
    columns: list[Column], empty: list[Column], *, sort: str | None, best_first: bool, query: dict[str, str]
) -> list[Header]:
    """The sortable headers: a column's link sorts by it best first; the sorted column's link
    reverses it. `aria-sort` says which way the values run down the table."""
    return [
        _header(c.slug, c.name, c.higher_is_better, c, sort, best_first, query, c in empty) for c in [*columns, *empty]
    ]


def people_header(
    dimension: str, *, sort: str | None, best_first: bool, query: dict[str, str], campaign: dict | None = None
) -> Header:
    """The people column's header: `dimension` is what it shows (an imported judgments' dimension,
    or a live `campaign`'s label)."""
    title = f"{dimension}, from live human evaluation, with its 95% interval (images resampled)" if campaign else ""
    return _header(PEOPLE, "People", True, None, sort, best_first, query, False, dimension=dimension, title=title)


def _header(
    slug, name, higher, column, sort, best_first, query, empty, *, dimension: str = "", title: str = ""
) -> Header:
    sorted_here = slug == sort
    params = {k: v for k, v in query.items() if k in ("q", "only") or (k == "domain" and v)}
    params["sort"] = slug
    if sorted_here and best_first:
        params["order"] = "asc" if higher else "desc"
    values_descend = higher if best_first else not higher
    aria = ("descending" if values_descend else "ascending") if sorted_here else "none"
    if column is not None:
        title = f"{column.name}: {column.description}" + (f" — {column.citation}" if column.citation else "")
        title += f"; a system's number: the {column.formed}"
        if column.points != 1:
            title += f" (shown ×{column.points:g})"
        if column.signature:
            title += f"; signature: {column.signature}"
    elif not title:
        title = f"mean human rating ({dimension}) of the system's captions, with its 95% interval"
    return Header(
        slug,
        name,
        title,
        "higher is better" if higher else "lower is better",
        "?" + urlencode(params),
        aria,
        empty,
    )


@dataclass(frozen=True)
class ColumnGroup:
    family: str
    columns: list[Column]


def column_groups(
    columns: list[Column], rows: list[BoardRow], *, keep: str | None = None
) -> tuple[list[ColumnGroup], list[Column]]:
    """The columns the board shows first, grouped by family (families in name order), and those
    with no number on any of `rows` (unavailable, failed or not scored), shown only when asked;
    `keep` (the sorted column) is shown first whatever it holds."""
    shown: dict[str, list[Column]] = {}
    empty = []
    for column in sorted(columns, key=lambda c: (c.family, c.name.lower())):
        if column.slug == keep or any(row.cells[column.slug].state == "value" for row in rows):
            shown.setdefault(column.family, []).append(column)
        else:
            empty.append(column)
    return [ColumnGroup(family, found) for family, found in shown.items()], empty


def board_context(page: CaptionerBoardPage, *, staff: bool, subsets: list[str]) -> dict:
    """What the captioner board's template renders: the page model, its columns grouped, the
    sortable headers and the rows as HTML."""
    groups, empty = column_groups(page.columns, page.rows, keep=page.sort)
    shown = [column for group in groups for column in group.columns]
    people = page.people
    params = {"q": page.query.search, "only": page.query.only or "", "domain": page.subset or ""}
    best_first = page.best_first
    return {
        "page": page,
        "dataset": page.dataset,
        "groups": groups,
        "empty": empty,
        "rows": page.rows,
        "query": page.query,
        "filters": FILTERS,
        "sort_name": page.sort_name,
        "best_first": best_first,
        "people": people,
        "people_header": people_header(
            people.label, sort=page.sort, best_first=best_first, query=params, campaign=people.campaign
        )
        if people
        else None,
        "headers": headers(shown, empty, sort=page.sort, best_first=best_first, query=params),
        "people_first": page.people_first,
        "table_rows": board_rows_html(
            shown,
            empty,
            page.rows,
            people=None if not people else "first" if page.people_first else "last",
            staff=staff,
            dataset_slug=page.dataset.slug,
        ),
        "compare_default": page.compare_default,
        "subsets": subsets,
        "subset": page.subset,
    }
