"""Reading a captioner's results file: the COCO captioning results format
(`[{"image_id": ..., "caption": "..."}]`), JSON Lines or CSV with the same two fields.

Django-free. Every problem is collected with where it is (file, entry or line, field), so a user
fixes the whole file in one go."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath

from plumbing.errors import ApplicationError, Problem

FORMATS = ("json", "jsonl", "csv")
MAX_PROBLEMS = 20

# C0 controls, DEL and C1 controls. A terminal acts on them (`ESC ]0;…` sets its title, `ESC [2J`
# clears it), and other people read names, descriptions and captions in theirs (`capbench board`),
# so free text that others read may not hold them; LAYOUT, where a text may run over lines.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
LAYOUT = "\t\n\r"  # a caption's or a description's tabs and line breaks (a textarea sends \r\n)


def control_character(text: str, *, allow: str = "") -> str:
    """Where `text` holds a control character other than those in `allow`, in words ("U+001B at
    character 4"); "" when it holds none."""
    for found in CONTROL.finditer(text):
        if found.group() not in allow:
            return f"U+{ord(found.group()):04X} at character {found.start() + 1}"
    return ""


def text_fields_problem(fields: dict[str, str], *, multiline: tuple[str, ...] = ("description",)) -> str:
    """The first named field (a method's or a metric's name, description, links) holding a control
    character, in words ("field 'name': …"); fields in `multiline` may hold tabs and line breaks.
    "" when none does. One rule for submissions and uploaded metrics."""
    for name, text in fields.items():
        if bad := control_character(text, allow=LAYOUT if name in multiline else ""):
            return f"field '{name}': contains a control character ({bad}); write plain text"
    return ""


def file_name_problem(file_name: str) -> str:
    """What is wrong with an uploaded file's name, which is kept and shown with the upload ("" if nothing)."""
    bad = control_character(file_name)
    return f"field 'file name' ({file_name!r}): contains a control character ({bad}); rename the file" if bad else ""


@dataclass(frozen=True)
class SubmittedCaption:
    where: str  # "entry 3" (JSON), "line 7" (JSONL, CSV)
    image_id: str
    caption: str


class SubmissionFileError(ApplicationError, ValueError):
    """The file cannot be accepted; `problems` lists each one with its place (the API's body lists
    them under "results", each after the file's name)."""

    detail_key = "results"

    def __init__(self, file_name: str, problems: list[str], more: int = 0):
        self.file_name, self.problems, self.more = file_name, problems, more
        located = [Problem(problem, where=file_name) for problem in problems]
        lines = [str(problem) for problem in located]
        if more:
            lines.append(f"{file_name}: … and {more:,} more problem(s)")
            located.append(Problem(f"… and {more:,} more problem(s)"))
        super().__init__("\n".join(lines), located=located)


# "line 7, field 'score': NaN is not …": the place, then what is wrong there (grouped by that).
PLACE = re.compile(r"(entry|line) (\d+)(?=[,:])(?!, column)")
PLACES_SHOWN = 10


@dataclass
class ProblemGroup:
    """One kind of problem (the same words after the place) and every place it was found."""

    text: str  # the first problem's whole text
    noun: str = ""  # "line", "entry"; empty for a problem without a place
    rest: str = ""  # what follows the place (", field 'score': NaN is not a finite number …")
    places: list[str] = field(default_factory=list)
    count: int = 1

    def line(self) -> str:
        """The problem as written when found once; else its places, then what is wrong there:
        "302 lines (4, 9, 15, … and 292 more), field 'score': NaN is not a finite number …"."""
        if self.count == 1:
            return self.text
        nouns = "entries" if self.noun == "entry" else f"{self.noun}s"
        shown = ", ".join(self.places[:PLACES_SHOWN])
        left = self.count - min(len(self.places), PLACES_SHOWN)
        if not left:
            return f"{nouns} {shown}{self.rest}"
        return f"{self.count:,} {nouns} ({shown} and {left:,} more){self.rest}"


class Problems:
    """A file's problems, the same problem on many lines written once with its places. At most
    MAX_PROBLEMS kinds are kept; problems of further kinds are counted in `more`."""

    def __init__(self, file_name: str):
        self.file_name, self.more = file_name, 0
        self.groups: dict[tuple[str, str], ProblemGroup] = {}

    def add(self, text: str) -> None:
        found = PLACE.match(text)
        noun, number, rest = (found.group(1), found.group(2), text[found.end() :]) if found else ("", "", text)
        group = self.groups.get((noun, rest))
        if group is not None:
            group.count += 1
            if len(group.places) < PLACES_SHOWN:
                group.places.append(number)
        elif len(self.groups) < MAX_PROBLEMS:
            self.groups[noun, rest] = ProblemGroup(text, noun, rest, [number] if number else [])
        else:
            self.more += 1

    @property
    def items(self) -> list[str]:
        return [group.line() for group in self.groups.values()]

    def raise_any(self) -> None:
        if self.groups:
            raise SubmissionFileError(self.file_name, self.items, self.more)


def detect_format(file_name: str, content: bytes) -> str:
    suffix = PurePath(file_name).suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return suffix
    if suffix in ("ndjson",):
        return "jsonl"
    start = content.removeprefix(b"\xef\xbb\xbf").lstrip()[:1]
    return "json" if start == b"[" else "jsonl" if start == b"{" else "csv"


def read_submission(
    file_name: str, content: bytes, *, max_caption_chars: int, problems: Problems | None = None
) -> tuple[str, list[SubmittedCaption]]:
    """(format, captions) or SubmissionFileError. Checks syntax, encoding, field types and caption
    lengths; the dataset checks (known ids, one per item) are the caller's. With `problems` given,
    the entries' problems are collected there (for the caller to add its own) instead of raised;
    an unreadable file (encoding, syntax) still raises at once."""
    collect = problems is not None
    if problems is None:
        problems = Problems(file_name)
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = content[: error.start].count(b"\n") + 1
        column = error.start - content.rfind(b"\n", 0, error.start)
        raise SubmissionFileError(file_name, [f"line {line}, column {column}: not valid UTF-8"]) from None
    file_format = detect_format(file_name, content)
    captions = []
    for where, entry in READERS[file_format](text, problems, RESULTS):
        caption = _caption(where, entry, problems, max_caption_chars)
        if caption is not None:
            captions.append(caption)
    if not captions and not problems.items:
        problems.add("the file has no captions")
    if not captions or not collect:
        problems.raise_any()
    return file_format, captions


@dataclass(frozen=True)
class Shape:
    """What a file's entries are, for the readers' messages: a results file's or a scores file's."""

    noun: str  # "results", "scores"
    columns: tuple[str, ...]  # the fields every entry has (the CSV header's columns)
    example: str  # one entry as JSON, for "expected a JSON list of … objects"
    known_as: str = ""  # the format's name, if it has one


RESULTS = Shape(
    "results", ("image_id", "caption"), '{"image_id": ..., "caption": "..."}', "the COCO captioning results format"
)


def json_entries(text: str, problems: Problems, shape: Shape = RESULTS):
    """(place, entry) of a JSON list (or a COCO-style object wrapping it in "annotations")."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        problems.add(f"line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}")
        return
    except (ValueError, RecursionError) as error:  # a 5,000-digit number, nesting thousands deep
        problems.add(f"not a {shape.noun} file: {_short(error)}")
        return
    if isinstance(data, dict) and isinstance(data.get("annotations"), list):
        data = data["annotations"]  # a COCO-style object wrapping the results list
    if not isinstance(data, list):
        known = f" ({shape.known_as})" if shape.known_as else ""
        problems.add(f"expected a JSON list of {shape.example} objects{known}, got a JSON {type(data).__name__}")
        return
    for number, entry in enumerate(data, start=1):
        yield f"entry {number}", entry


def jsonl_entries(text: str, problems: Problems, shape: Shape = RESULTS):
    """(place, entry) of each non-blank line of JSON Lines."""
    # Only "\n" ends a line: U+2028 and friends may stand raw inside a JSON string.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as error:
            problems.add(f"line {number}, column {error.colno}: invalid JSON: {error.msg}")
        except (ValueError, RecursionError) as error:
            problems.add(f"line {number}: not a {shape.noun} entry: {_short(error)}")


def csv_entries(text: str, problems: Problems, shape: Shape = RESULTS):
    """(place, row) of a CSV file whose header has the shape's columns."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
    except csv.Error as error:
        problems.add(f"line 1: invalid CSV: {error}")
        return
    missing = [name for name in shape.columns if name not in header]
    if missing:
        problems.add(
            f"line 1: the CSV header needs the columns {' and '.join(shape.columns)}; "
            f"missing {', '.join(missing)} (found: {', '.join(header) or 'nothing'})"
        )
        return
    try:
        for row in reader:
            yield f"line {reader.line_num}", row
    except csv.Error as error:
        problems.add(f"line {reader.line_num}: invalid CSV: {error}")


READERS = {"json": json_entries, "jsonl": jsonl_entries, "csv": csv_entries}


def _caption(where: str, entry: object, problems: Problems, max_chars: int) -> SubmittedCaption | None:
    if not isinstance(entry, dict):
        problems.add(f"{where}: expected an object with image_id and caption, got {type(entry).__name__}")
        return None
    image_id, caption = entry.get("image_id"), entry.get("caption")
    found = [problem for problem in (_image_id_problem(image_id), _caption_problem(caption, max_chars)) if problem]
    if not found and not _encodable(str(image_id)):
        found.append("field 'image_id': contains an unpaired surrogate, not text")
    for problem in found:
        problems.add(f"{where}, {problem}")
    if found or not isinstance(caption, str):  # no problem implies a string; the check narrows the type
        return None
    return SubmittedCaption(where, str(image_id).strip(), caption.strip())


def _image_id_problem(image_id: object) -> str | None:
    if image_id is None or image_id == "":
        return "field 'image_id': missing"
    if isinstance(image_id, bool) or not isinstance(image_id, (int, str)):
        return f"field 'image_id': expected a string or an integer, got {json.dumps(image_id)}"
    return None


def _caption_problem(caption: object, max_chars: int) -> str | None:
    if not isinstance(caption, str):
        return f"field 'caption': expected a string, got {'nothing' if caption is None else type(caption).__name__}"
    if not caption.strip():
        return "field 'caption': empty"
    if len(caption) > max_chars:
        return f"field 'caption': {len(caption):,} characters, more than the limit of {max_chars:,}"
    if bad := control_character(caption, allow=LAYOUT):  # a NUL too (no stored text may hold one)
        return f"field 'caption': contains a control character ({bad}); write plain text"
    if not _encodable(caption):
        return "field 'caption': contains an unpaired surrogate (\\ud800–\\udfff), not text"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(error: Exception) -> str:
    return str(error).split("\n")[0][:200] or type(error).__name__
