"""The shapes Polaris and Nebula are published in: one judged candidate per record, `mt` (the
candidate), `refs` (the reference captions), `score` (the human rating normalised to 0-1) and
`imgid` (the image's file name), or the dataset cards' names for them (`cand`, `human_score`, `img`).
As CSV (the authors' evaluation code reads it; `refs` a Python list literal, other columns such as a
pandas index ignored and named in a warning) or as a JSON list of such objects (Nebula's
`{imgid, mt, refs, score}`). docs/datasets.md §2.6-2.7.

Items are the images; the rare image whose records carry two different reference lists becomes two
items (`<imgid>`, `<imgid>#2`, ...), so a metric always gets the references its record named."""

from __future__ import annotations

import ast
from pathlib import Path

from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    JudgmentRow,
    MediaRow,
    SystemRow,
    normalise_whitespace,
)
from catalog.importers.delimited import header_and_records
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import (
    json_document,
    parse_float,
    parse_text,
    parse_text_list,
    require_object,
    source_file,
)

COLUMNS = ["mt", "refs", "score", "imgid"]
# Each column under the names it is published with: the authors' CSV (`mt`, `refs`, `score`, `imgid`)
# and the dataset cards' (`cand`, `refs`, `human_score`, `img`).
ALIASES = {
    "mt": ("mt", "cand", "candidate"),
    "refs": ("refs", "references"),
    "score": ("score", "human_score"),
    "imgid": ("imgid", "img", "image"),
}
DIMENSION = "overall"


class _Judged:
    """The bundle being built, one judged record at a time."""

    def __init__(self, source: Path, info: DatasetInfo, system: SystemRow):
        self.source, self.system = source, system
        self.bundle = DatasetBundle(info=info, systems=[system])
        self.items: dict[tuple[str, tuple[str, ...]], ItemRow] = {}
        self.sets_per_image: dict[str, int] = {}

    def add(self, row: dict, *, number: int, line: int | None, where: str, references: list[str]) -> None:
        path = self.source
        text = normalise_whitespace(parse_text(row["mt"], path=path, line=line, field=f"{where}mt"))
        score = parse_float(row["score"], path=path, line=line, field=f"{where}score", low=0, high=1)
        image = parse_text(row["imgid"], path=path, line=line, field=f"{where}imgid").strip()
        item = self.items.get((image, tuple(references)))
        if item is None:
            self.sets_per_image[image] = self.sets_per_image.get(image, 0) + 1
            count = self.sets_per_image[image]
            item = ItemRow(
                external_id=image if count == 1 else f"{image}#{count}",
                media=Path(image).name,
                references=list(references),
            )
            self.items[(image, tuple(references))] = item
        key = CaptionKey(item=item.external_id, system=self.system.slug, external_id=f"r{number}")
        self.bundle.captions.append(CaptionRow(key=key, text=text))
        self.bundle.judgments.append(JudgmentRow(caption=key, dimension=DIMENSION, value=score))

    def done(self) -> DatasetBundle:
        bundle = self.bundle
        if not bundle.captions:
            raise ImportFormatError(self.source, None, None, "no judged records")
        bundle.items = list(self.items.values())
        bundle.media = [
            MediaRow(name=name, kind="image") for name in dict.fromkeys(i.media or "" for i in bundle.items)
        ]
        bundle.report["images"] = len(self.sets_per_image)
        bundle.report["images_with_several_reference_lists"] = sum(c > 1 for c in self.sets_per_image.values())
        return bundle


def _named(source: Path, names: list[str], line: int | None, where: str = "") -> dict[str, str]:
    """Each column's name in this file (ALIASES), or a located error naming what is missing."""
    found = {}
    for column, aliases in ALIASES.items():
        name = next((alias for alias in aliases if alias in names), None)
        if name is None:
            raise ImportFormatError(source, line, f"{where}{column}", f"missing (also read as: {', '.join(aliases)})")
        found[column] = name
    return found


def parse_judged(path: Path, stem: str, *, info: DatasetInfo, system: SystemRow) -> DatasetBundle:
    """`path` itself (`.json` read as JSON, anything else as CSV), or in the folder `path`
    `<stem>.json` when present, else `<stem>.csv`."""
    if path.is_dir() and (path / f"{stem}.json").is_file():
        path = path / f"{stem}.json"
    source = source_file(path, f"{stem}.csv")
    if source.suffix.lower() == ".json":
        return parse_judged_json(source, info=info, system=system)
    return parse_judged_csv(source, info=info, system=system)


def parse_judged_csv(source: Path, *, info: DatasetInfo, system: SystemRow) -> DatasetBundle:
    """The CSV form: a header naming the columns, then one judged record per row."""
    header, records = header_and_records(source)
    named = _named(source, header, 1)
    judged = _Judged(source, info, system)
    for record in records:
        row = {column: record.values[name] for column, name in named.items()}
        references = _references(row["refs"], path=source, line=record.line)
        judged.add(row, number=record.number, line=record.line, where="", references=references)
    bundle = judged.done()
    ignored = [name or "(unnamed)" for name in header if name not in named.values()]
    if ignored:
        bundle.warnings.append(f"{source}: columns not imported: {', '.join(ignored)}")
    return bundle


def parse_judged_json(source: Path, *, info: DatasetInfo, system: SystemRow) -> DatasetBundle:
    """The JSON form: a list of objects with the same fields, `refs` a JSON list of strings; errors
    name the record's place in the list (`[12].score`)."""
    document = json_document(source)
    if not isinstance(document, list):
        raise ImportFormatError(source, None, None, f"expected a JSON list of records, found {type(document).__name__}")
    judged = _Judged(source, info, system)
    for index, raw in enumerate(document):
        where = f"[{index}]."
        row = require_object(raw, path=source, line=None, field=f"[{index}]")
        named = _named(source, list(row), None, where)
        values = {column: row[name] for column, name in named.items()}
        references = parse_text_list(values["refs"], path=source, line=None, field=f"{where}refs")
        judged.add(
            values,
            number=index + 1,
            line=None,
            where=where,
            references=[normalise_whitespace(reference) for reference in references],
        )
    return judged.done()


def _references(raw: str, *, path: Path, line: int) -> list[str]:
    """The `refs` cell: a list literal such as `['a dog.', "a cat's toy."]`, read as data (never run)."""
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ImportFormatError(path, line, "refs", "expected a list literal of reference captions") from None
    references = parse_text_list(value, path=path, line=line, field="refs")
    return [normalise_whitespace(reference) for reference in references]
