"""The CSV shape the Polos and DENEB authors read Polaris and Nebula from: one judged candidate per
record, columns `mt` (the candidate), `refs` (a Python list literal of reference captions), `score`
(the human rating normalised to 0-1) and `imgid` (the image's file name); other columns (a pandas
index, say) are ignored and named in a warning. docs/datasets.md §2.6-2.7.

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
from catalog.importers.delimited import header_and_records, require_columns
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import parse_float, parse_text, parse_text_list

COLUMNS = ["mt", "refs", "score", "imgid"]
DIMENSION = "overall"


def parse_judged_csv(source: Path, *, info: DatasetInfo, system: SystemRow) -> DatasetBundle:
    header, records = header_and_records(source)
    require_columns(source, header, COLUMNS)
    bundle = DatasetBundle(info=info, systems=[system])
    items: dict[tuple[str, tuple[str, ...]], ItemRow] = {}
    sets_per_image: dict[str, int] = {}
    for record in records:
        row, line = record.values, record.line
        text = normalise_whitespace(parse_text(row["mt"], path=source, line=line, field="mt"))
        references = tuple(_references(row["refs"], path=source, line=line))
        score = parse_float(row["score"], path=source, line=line, field="score", low=0, high=1)
        image = parse_text(row["imgid"], path=source, line=line, field="imgid").strip()
        item = items.get((image, references))
        if item is None:
            sets_per_image[image] = sets_per_image.get(image, 0) + 1
            count = sets_per_image[image]
            item = ItemRow(
                external_id=image if count == 1 else f"{image}#{count}",
                media=Path(image).name,
                references=list(references),
            )
            items[(image, references)] = item
        key = CaptionKey(item=item.external_id, system=system.slug, external_id=f"r{record.number}")
        bundle.captions.append(CaptionRow(key=key, text=text))
        bundle.judgments.append(JudgmentRow(caption=key, dimension=DIMENSION, value=score))
    if not bundle.captions:
        raise ImportFormatError(source, None, None, "no records after the header")
    bundle.items = list(items.values())
    bundle.media = [MediaRow(name=name, kind="image") for name in dict.fromkeys(i.media or "" for i in bundle.items)]
    bundle.report["images"] = len(sets_per_image)
    bundle.report["images_with_several_reference_lists"] = sum(count > 1 for count in sets_per_image.values())
    ignored = [name or "(unnamed)" for name in header if name not in COLUMNS]
    if ignored:
        bundle.warnings.append(f"{source}: columns not imported: {', '.join(ignored)}")
    return bundle


def _references(raw: str, *, path: Path, line: int) -> list[str]:
    """The `refs` cell: a list literal such as `['a dog.', "a cat's toy."]`, read as data (never run)."""
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ImportFormatError(path, line, "refs", "expected a list literal of reference captions") from None
    references = parse_text_list(value, path=path, line=line, field="refs")
    return [normalise_whitespace(reference) for reference in references]
