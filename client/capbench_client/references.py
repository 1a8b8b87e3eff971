"""A dataset's references file (`capbench references`, `GET /api/v1/datasets/SLUG/references/`):
one JSON object a line per item, in the dataset's order, `item` (the id results files name the
image by), `image` (its file name, or null), `position` (0, 1, …: the order the board's bootstrap
draws images in) and `references` (null on a hidden test set). docs/client.md, "capbench references".

`ReferenceSet` finds an item by its id, its image's file name (with or without the extension) or
its reference captions: what `capbench submit --format lmms-eval` and `capbench eval` map a
results file's lines with."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from capbench_client.problems import FileProblems


@dataclass(frozen=True)
class Reference:
    item: str
    image: str | None
    position: int
    references: tuple[str, ...] | None


def references_key(texts: Iterable[str]) -> tuple[str, ...]:
    """Reference captions compared as a set, each with its runs of whitespace made one space."""
    return tuple(sorted(" ".join(text.split()) for text in texts))


@dataclass
class ReferenceSet:
    """A dataset's items from its references file, found by id, file name or references."""

    dataset: str
    rows: list[Reference]
    by_item: dict[str, Reference] = field(init=False, repr=False)
    by_name: dict[str, Reference] = field(init=False, repr=False)
    by_references: dict[tuple[str, ...], Reference] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_item = {row.item: row for row in self.rows}
        names: dict[str, list[Reference]] = {}
        texts: dict[tuple[str, ...], list[Reference]] = {}
        for row in self.rows:
            if row.image:
                for name in {row.image, PurePath(row.image).stem}:
                    names.setdefault(name, []).append(row)
            if row.references:
                texts.setdefault(references_key(row.references), []).append(row)
        # A name or a set of references two items share finds neither.
        self.by_name = {name: found[0] for name, found in names.items() if len(found) == 1}
        self.by_references = {key: found[0] for key, found in texts.items() if len(found) == 1}

    @property
    def hidden(self) -> bool:
        """Whether the file holds no references (a hidden test set, read by someone other than staff)."""
        return bool(self.rows) and all(row.references is None for row in self.rows)

    def example(self) -> str:
        return self.rows[0].item if self.rows else "nothing"

    def find(self, key: str) -> Reference | None:
        """The item whose id is `key`, else whose image's file name (or its name without the
        extension) is `key` or `key` without its extension."""
        key = key.strip()
        if not key:
            return None
        return self.by_item.get(key) or self.by_name.get(key) or self.by_name.get(PurePath(key).stem)

    def find_by_references(self, texts: Sequence[str]) -> Reference | None:
        return self.by_references.get(references_key(texts)) if texts else None


def reference_set(dataset: str, lines: Iterable[str | bytes], file_name: str) -> ReferenceSet:
    """The references file's lines read, every malformed line named (ValueError via FileProblems)."""
    problems = FileProblems(file_name)
    rows: list[Reference] = []
    for number, line in enumerate(lines, start=1):
        text = line.decode("utf-8") if isinstance(line, bytes) else line
        if not text.strip():
            continue
        row = _row(text, f"line {number}", problems)
        if row is not None:
            rows.append(row)
    if not rows and not problems:
        problems.add("no items: not a references file")
    problems.raise_any("not a references file of `capbench references`")
    return ReferenceSet(dataset, rows)


def _row(text: str, where: str, problems: FileProblems) -> Reference | None:
    try:
        raw = json.loads(text)
    except ValueError as error:
        problems.add(f"{where}: not JSON ({error})")
        return None
    if not isinstance(raw, dict):
        problems.add(f"{where}: expected an object with item, image, position, references")
        return None
    item, image, position, references = raw.get("item"), raw.get("image"), raw.get("position"), raw.get("references")
    if not isinstance(item, str) or not item:
        problems.add(f"{where}, field 'item': expected the item's id")
    elif image is not None and not isinstance(image, str):
        problems.add(f"{where}, field 'image': expected a file name or null")
    elif isinstance(position, bool) or not isinstance(position, int):
        problems.add(f"{where}, field 'position': expected a whole number")
    elif references is not None and not (
        isinstance(references, list) and all(isinstance(text, str) for text in references)
    ):
        problems.add(f"{where}, field 'references': expected a list of captions or null")
    else:
        return Reference(item, image, position, None if references is None else tuple(references))
    return None
