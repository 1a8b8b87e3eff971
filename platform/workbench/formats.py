"""Reading a metric's scores file: JSON Lines `{"caption_id": "...", "score": 0.42}`, CSV with the
columns caption_id and score, or a JSON list of such objects.

Django-free. Like a captioner's results file, every problem is collected with its place (file,
line or entry, field), so a researcher fixes the whole file in one go; which ids the dataset knows
is the caller's check."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from submissions.formats import READERS, Problems, Shape, SubmissionFileError, detect_format

SCORES = Shape("scores", ("caption_id", "score"), '{"caption_id": ..., "score": ...}')


@dataclass(frozen=True)
class SubmittedScore:
    where: str  # "line 7" (JSONL, CSV), "entry 3" (JSON)
    caption_id: str
    score: float


def read_scores(file_name: str, content: bytes, problems: Problems) -> tuple[str, list[SubmittedScore]]:
    """(format, scores), the entries' problems added to `problems`. An empty or unreadable file
    (encoding) is one problem; the caller raises them all at once."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = content[: error.start].count(b"\n") + 1
        problems.add(f"line {line}: not valid UTF-8")
        return "", []
    file_format = detect_format(file_name, content)
    entries = READERS[file_format](text, problems, SCORES)
    scores = [score for where, entry in entries if (score := _score(where, entry, problems))]
    if not scores and not problems.items:
        problems.add("the file has no scores")
    return file_format, scores


def _score(where: str, entry: object, problems: Problems) -> SubmittedScore | None:
    if not isinstance(entry, dict):
        problems.add(f"{where}: expected an object with caption_id and score, got {type(entry).__name__}")
        return None
    caption_id, value = entry.get("caption_id"), entry.get("score")
    ok = True
    if not isinstance(caption_id, str) or not caption_id.strip():
        got = "nothing" if caption_id in (None, "") else json.dumps(caption_id)[:60]
        problems.add(f"{where}, field 'caption_id': expected the id from the candidates file, got {got}")
        ok = False
    number = _number(value)
    if number is None:
        got = "nothing" if value in (None, "") else json.dumps(value)[:60]
        problems.add(f"{where}, field 'score': expected a number, got {got}")
        ok = False
    elif not math.isfinite(number):
        shown = "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
        problems.add(f"{where}, field 'score': {shown} is not a finite number (it cannot be ranked)")
        ok = False
    if not ok or not isinstance(caption_id, str) or number is None:
        return None
    return SubmittedScore(where, caption_id.strip(), number)


def _number(value: object) -> float | None:
    """A JSON number, or a CSV cell's text read as one; a boolean is not a score."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer of a thousand digits
            return math.inf
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


__all__ = ["SCORES", "SubmissionFileError", "SubmittedScore", "read_scores"]
