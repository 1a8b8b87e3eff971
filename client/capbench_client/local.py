"""`capbench eval`: a results file scored on this machine by the capbench-eval library, against a
dataset's references, giving each metric's number as the board shows it and its signature
(docs/client.md, "capbench eval").

The number is the board's because everything the board's number depends on is given as the board
gives it: the captions as the server stores them (stripped), each item's references, and each
caption's image as its position in the dataset's order (the item primary-key order the board's
bootstrap draws images in), so the 95% interval's resamples are the board's too.

capbench-eval is imported here only, when the command runs: the client installs and runs without
it (`import capbench_client.cli` loads none of it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from capbench_client.references import ReferenceSet
from capbench_client.results import Matched
from capbench_client.tables import table

INSTALL = (
    "`capbench eval` scores with the capbench-eval library, which is not installed here: "
    "pip install capbench-eval (or, from a CapBench checkout, pip install ./evaluation)"
)


class LibraryMissing(RuntimeError):
    """capbench-eval cannot be imported."""


@dataclass(frozen=True)
class Outcome:
    """One metric's result: its number as the board shows it (`shown`) and its signature, or why
    there is none (`error`)."""

    metric: str
    name: str = ""
    shown: str = ""
    value: float | None = None
    low: float | None = None
    high: float | None = None
    points: float | None = None
    images: int = 0
    signature: str = ""
    error: str = ""
    board_signature: str | None = None  # the server's, where it gave one and it differs


@dataclass(frozen=True)
class Library:
    """What `capbench eval` uses of capbench-eval."""

    score: Callable[..., Any]  # capbench_eval.library.score
    metric: Callable[[str], Any]  # capbench_eval.metrics.get: a slug's Metric (UnknownMetric if none)
    refused: tuple[type[BaseException], ...]  # what a metric that cannot score here raises


def library() -> Library:
    """capbench-eval, imported now (LibraryMissing, saying how to install it, when it is not)."""
    try:
        from capbench_eval.errors import MetricUnavailable
        from capbench_eval.library import score
        from capbench_eval.metrics import UnknownMetric, get
    except ImportError as error:
        raise LibraryMissing(f"{INSTALL} ({error})") from None
    return Library(score, get, (ValueError, UnknownMetric, MetricUnavailable))


def evaluate(
    matched: Matched, references: ReferenceSet, metrics: list[str], *, media: Path | None = None
) -> list[Outcome]:
    """Each metric's outcome on the matched captions (one corpus, as the board scores a submission)."""
    found = library()
    rows = {item: references.by_item[item] for item in matched.captions}
    inputs = {
        "references": None if references.hidden else {item: list(row.references or ()) for item, row in rows.items()},
        "images": {item: row.position for item, row in rows.items()},
        "media": None if media is None else {item: str(media / row.image) for item, row in rows.items() if row.image},
    }
    outcomes = []
    for slug in metrics:
        try:
            _check_inputs(found.metric(slug), inputs, references.dataset)
            scores = found.score(
                slug, matched.captions, inputs["references"], images=inputs["images"], media=inputs["media"]
            )
        except found.refused as error:
            outcomes.append(Outcome(slug, error=_message(error)))
            continue
        outcomes.append(
            Outcome(
                slug,
                name=scores.name,
                shown=scores.shown(),
                value=scores.value,
                low=scores.low,
                high=scores.high,
                points=scores.points,
                images=scores.images,
                signature=scores.signature,
            )
        )
    return outcomes


def _check_inputs(metric: Any, inputs: dict[str, Any], dataset: str) -> None:
    """What the command line lacks for `metric`, in its words (ValueError)."""
    if "references" in metric.needs and inputs["references"] is None:
        raise ValueError(
            f"dataset {dataset!r} hides its references (a hidden test set): {metric.name}'s number comes "
            "from submitting only"
        )
    if "media" in metric.needs and inputs["media"] is None:
        raise ValueError(f"{metric.name} looks at each image: give --media DIR (the images, by their file names)")


def _message(error: BaseException) -> str:
    return str(error.args[0]) if isinstance(error, KeyError) and error.args else str(error)


def with_board_signatures(outcomes: list[Outcome], board: dict[str, str | None]) -> list[Outcome]:
    """`board`: each metric's signature as the server gives it (None where it gives none); kept on
    the outcomes whose local signature differs."""
    return [
        Outcome(**{**asdict(o), "board_signature": board.get(o.metric)})
        if o.signature and board.get(o.metric) and board.get(o.metric) != o.signature
        else o
        for o in outcomes
    ]


def outcome_text(outcomes: list[Outcome], matched: Matched, references: ReferenceSet, source: str) -> str:
    """The outcomes as people read them: a line saying what was scored, a table of metric, number
    (points, 95% interval, as a board cell) and signature, then what could not be scored."""
    captions = len(matched.captions)
    lines = [f"{captions:,} captions of dataset {references.dataset!r} scored against {source}:"]
    scored = [o for o in outcomes if not o.error]
    if scored:
        lines.append(
            table(["metric", "number [95% interval]", "signature"], [[o.name, o.shown, o.signature] for o in scored])
        )
    lines += [
        f"note: {o.metric}: the server's signature differs: {o.board_signature}" for o in scored if o.board_signature
    ]
    lines += [f"{o.metric}: not scored: {o.error}" for o in outcomes if o.error]
    return "\n".join(lines)


def outcome_json(outcomes: list[Outcome], matched: Matched, references: ReferenceSet) -> str:
    body = {
        "dataset": references.dataset,
        "captions": len(matched.captions),
        "missing": len(matched.missing),
        "metrics": [asdict(o) for o in outcomes],
    }
    return json.dumps(body, indent=2, ensure_ascii=False)
