"""The captioner board's rows as HTML, built in Python: 200 systems × 40 metrics are 8,000 cells,
which Django's template engine renders ten times slower. Every piece of user text is escaped."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from leaderboards.selectors import BoardRow, Column, SubmissionInfo


def metric_value(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


def board_rows_html(columns: list[Column], rows: list[BoardRow], sort: str | None) -> SafeString:
    parts = []
    for row in rows:
        rank = row.cells[sort].rank if sort in row.cells else None
        name: str = escape(row.system.name)
        if row.system.is_baseline:
            name += ' <span class="badge">baseline</span>'
        if isinstance(row.submission, SubmissionInfo):  # BoardRow.submission is one or None
            if row.submission.paper_url:
                name += f' <a href="{escape(row.submission.paper_url)}" rel="noopener nofollow">paper</a>'
            if row.submission.code_url:
                name += f' <a href="{escape(row.submission.code_url)}" rel="noopener nofollow">code</a>'
        cells = []
        for column in columns:
            cell = row.cells[column.slug]
            text = metric_value(cell.value) if cell.state == "value" else "—" if cell.state == "missing" else cell.state
            note = f' title="{escape(cell.note)}"' if cell.note else ""
            if cell.state == "value" and cell.low is not None:
                note = f' title="95% interval [{metric_value(cell.low)}, {metric_value(cell.high)}]"'
            cells.append(
                f'<td class="num state-{cell.state}" data-metric="{escape(column.slug)}"{note}>{escape(text)}</td>'
            )
        parts.append(f'<tr><td class="num">{rank if rank is not None else ""}</td><td>{name}</td>{"".join(cells)}</tr>')
    return mark_safe("\n".join(parts))  # noqa: S308  (every interpolated value above is escaped)
