"""A results file read on this machine and matched to a dataset's items (its references file):
what `capbench eval` scores, and what `capbench submit --format lmms-eval` turns into the COCO
results format before it uploads it.

The formats are the server's (a JSON list of `{"image_id", "caption"}`, or a COCO-style object
holding it under "annotations"; JSON Lines; CSV with an `image_id,caption` header), matched as the
server matches them (the image id is the item's id, exactly; one caption per image), and
lmms-eval's `--log_samples` output (capbench_client/lmms_eval.py). Every problem is named with its
line (or entry) and field, all of them at once."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from capbench_client.lmms_eval import Sample, looks_like_samples, read_samples
from capbench_client.problems import FileProblems
from capbench_client.references import Reference, ReferenceSet

FORMATS = ("auto", "json", "jsonl", "csv", "lmms-eval")
SUFFIXES = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}


@dataclass(frozen=True)
class Matched:
    """A results file's captions by item id, in the file's order, the dataset's items it has no
    caption for (in the dataset's order), and how many of its lines named an image the dataset does
    not have (left out, when asked to)."""

    format: str
    captions: dict[str, str]
    missing: list[str]
    skipped: int = 0

    def results_json(self) -> bytes:
        """The captions in the COCO captioning results format, as the server reads it."""
        rows = [{"image_id": item, "caption": caption} for item, caption in self.captions.items()]
        return json.dumps(rows, ensure_ascii=False).encode("utf-8")


def results_format(path: Path, given: str = "auto") -> str:
    """The file's format: `given`, else lmms-eval when its first line is an lmms-eval sample, else
    by its suffix, else by its first character (as the server decides)."""
    if given != "auto":
        return given
    with path.open(encoding="utf-8-sig", errors="replace") as opened:
        line = next((text for text in opened if text.strip()), "")
    first = line.lstrip()[:1]
    if first == "{":
        try:
            if looks_like_samples(json.loads(line)):
                return "lmms-eval"
        except ValueError:  # a JSON list spread over lines, or not JSON: the server's formats
            pass
    return SUFFIXES.get(path.suffix.lower()) or ("json" if first == "[" else "jsonl" if first == "{" else "csv")


def matched_results(
    path: Path, references: ReferenceSet, format: str = "auto", *, skip_unmatched: bool = False
) -> Matched:
    """The file's captions matched to the dataset's items; a FileError names every line that is
    unreadable, unmatched or a second caption of one image. `skip_unmatched`: a line naming an
    image the dataset does not have is left out and counted instead (lmms-eval's Flickr30k runs
    all 31,783 images, the board's Flickr30k the Karpathy test split's 1,000)."""
    chosen = results_format(path, format)
    problems = FileProblems(path.name)
    unmatched = _Unmatched(problems, references, skip_unmatched)
    if chosen == "lmms-eval":
        captions = _samples_matched(read_samples(path, problems), references, problems, unmatched)
    else:
        captions = _entries_matched(_entries(path, chosen, problems), references, problems, unmatched)
    if not captions and not problems:
        problems.add(
            "no captions" + (f" of the dataset's images ({unmatched.count:,} of others)" if unmatched.count else "")
        )
    problems.raise_any(f"cannot be matched to dataset {references.dataset!r}")
    missing = [row.item for row in references.rows if row.item not in captions]
    return Matched(chosen, captions, missing, unmatched.count)


class _Unmatched:
    """Lines that name an image the dataset does not have: a problem each, or counted when skipped."""

    def __init__(self, problems: FileProblems, references: ReferenceSet, skip: bool) -> None:
        self.problems, self.references, self.skip, self.count = problems, references, skip, 0

    def add(self, where: str, key: str) -> None:
        if self.skip:
            self.count += 1
            return
        self.problems.add(
            f"{where} {key!r} is not an image of dataset {self.references.dataset!r} "
            f"(its ids look like {self.references.example()!r})"
        )


# lmms-eval's samples


def _samples_matched(
    samples: list[Sample], references: ReferenceSet, problems: FileProblems, unmatched: _Unmatched
) -> dict[str, str]:
    captions: dict[str, str] = {}
    first: dict[str, str] = {}
    for found in samples:
        item = _sample_item(found, references)
        key = found.image_id if found.image_id is not None else next(iter(found.names), None)
        if item is None and key is None:
            problems.add(
                f"{found.where}: no image id: not a sample of lmms-eval's COCO, nocaps or Flickr30k captioning "
                "tasks (their per-sample records carry image_id)"
            )
        elif item is None:
            unmatched.add(f"{found.where}: image id", str(key))
        elif found.caption is None:
            problems.add(f"{found.where}: no model response (filtered_resps or resps)")
        elif not found.caption.strip():
            problems.add(f"{found.where}: the model's response is empty")
        elif item.item in first:
            problems.add(
                f"{found.where}: image {item.item!r} again (first at {first[item.item]}); one sample per image"
            )
        else:
            first[item.item] = found.where
            captions[item.item] = found.caption.strip()
    return captions


def _sample_item(found: Sample, references: ReferenceSet) -> Reference | None:
    by_text = references.find_by_references(found.references)
    if by_text is not None:
        return by_text
    for key in (found.image_id, *found.names):
        item = references.find(key) if key else None
        if item is not None:
            return item
    return None


# The server's formats


@dataclass(frozen=True)
class _Entry:
    where: str
    raw: object


def _entries(path: Path, format: str, problems: FileProblems) -> Iterator[_Entry]:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as error:
        problems.add(f"not valid UTF-8 (byte {error.start + 1})")
        return
    if format == "json":
        yield from _json_entries(text, problems)
    elif format == "jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    yield _Entry(f"line {number}", json.loads(line))
                except ValueError as error:
                    problems.add(f"line {number}: not JSON ({error})")
    else:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if not {"image_id", "caption"} <= set(reader.fieldnames or []):
            problems.add("line 1: expected a CSV header naming image_id and caption")
            return
        for row in reader:
            yield _Entry(f"line {reader.line_num}", row)


def _json_entries(text: str, problems: FileProblems) -> Iterator[_Entry]:
    try:
        data = json.loads(text)
    except ValueError as error:
        problems.add(f"not JSON ({error})")
        return
    if isinstance(data, dict) and isinstance(data.get("annotations"), list):
        data = data["annotations"]
    if not isinstance(data, list):
        problems.add('expected a JSON list of {"image_id": ..., "caption": "..."} objects')
        return
    for number, entry in enumerate(data, start=1):
        yield _Entry(f"entry {number}", entry)


def _entries_matched(
    entries: Iterator[_Entry], references: ReferenceSet, problems: FileProblems, unmatched: _Unmatched
) -> dict[str, str]:
    captions: dict[str, str] = {}
    first: dict[str, str] = {}
    for entry in entries:
        pair = _pair(entry, problems)
        if pair is None:
            continue
        image_id, caption = pair
        if image_id not in references.by_item:
            unmatched.add(f"{entry.where}, field 'image_id':", image_id)
        elif image_id in first:
            problems.add(
                f"{entry.where}, field 'image_id': {image_id!r} again (first at {first[image_id]}); "
                "give exactly one caption per image"
            )
        else:
            first[image_id] = entry.where
            captions[image_id] = caption
    return captions


def _pair(entry: _Entry, problems: FileProblems) -> tuple[str, str] | None:
    if not isinstance(entry.raw, dict):
        problems.add(f"{entry.where}: expected an object with image_id and caption")
        return None
    image_id, caption = entry.raw.get("image_id"), entry.raw.get("caption")
    if image_id is None or image_id == "" or isinstance(image_id, bool) or not isinstance(image_id, str | int):
        problems.add(f"{entry.where}, field 'image_id': expected a string or an integer")
    elif not isinstance(caption, str) or not caption.strip():
        problems.add(f"{entry.where}, field 'caption': {'empty' if isinstance(caption, str) else 'missing'}")
    else:
        return str(image_id).strip(), caption.strip()
    return None
