"""The query parameters of the boards, the per-caption scores and the correlations."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter

from leaderboards.captioner import FILTERS
from leaderboards.metric_board import LEVELS, ORDERS, PROTOCOLS, REFERENCES


def query(name: str, description: str, *, enum: tuple[str, ...] | list[str] | None = None, kind=str):
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, required=False, enum=enum, description=description)


CAPTIONER_BOARD_PARAMETERS = [
    query("sort", "a metric's slug (or `people`) to rank by; default the dataset's headline metric"),
    query("order", "`desc` or `asc`: against the column's direction lists the worst first", enum=("asc", "desc")),
    query("q", "only systems whose name holds this text"),
    query("only", "only baselines, or systems with a paper or code link", enum=FILTERS),
    query("domain", "one of the dataset's image subsets (nocaps: in-domain, near-domain, out-domain)"),
    query("format", "`json` (the default) or `csv`", enum=("json", "csv")),
]

METRIC_BOARD_PARAMETERS = [
    query(
        "protocol",
        "the paper's protocol, CapBench's canonical one, or the live campaigns' (a column per campaign; another: 404)",
        enum=PROTOCOLS,
    ),
    query("level", "caption-level or system-level agreement", enum=LEVELS),
    query("family", "only metrics of this family (an unknown one: 404)"),
    query("reference", "only reference-free or reference-based metrics", enum=REFERENCES),
    query(
        "sort",
        "rank the metrics by a column (its `key`: `<dataset>:<dimension>:<statistic>`, and `:<campaign>` on a "
        "live column), by a dataset's first column (its slug) or by name (`metric`); default: the first "
        "dataset's headline statistic (another value: 400)",
    ),
    query("order", "`desc` (the default for a column: best agreement first) or `asc`", enum=ORDERS),
]

SCORE_PARAMETERS = [
    query("dataset", "a dataset's slug"),
    query("system", "a system's slug"),
    query("metric", "a metric's slug"),
    query(
        "layout",
        "`long` (the default): one row per caption and metric version; `wide`: one row per caption, "
        "`scores` keyed by metric slug (`value`, `points`, `error`; the newest version's), cursor pages of captions",
        enum=("long", "wide"),
    ),
]

CORRELATION_PARAMETERS = [
    query("dataset", "a dataset's slug"),
    query("metric", "a metric's slug"),
    query("protocol", "`paper`, `canonical` or `live` (a live campaign's)", enum=PROTOCOLS),
    query("level", "`caption` or `system`", enum=LEVELS),
]
