"""THumB 1.0 (`mscoco_THumB-1.0.jsonl` + `mscoco_references.json`, which is JSON Lines despite its
name): 500 MSCOCO images x 5 systems, precision and recall (1-5) plus penalties, and the total
`human_score = (P + R) / 2 + penalties`."""

from __future__ import annotations

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
from catalog.importers.errors import ImportFormatError
from catalog.importers.media_urls import coco_image_url
from catalog.importers.sources import (
    json_lines,
    parse_float,
    parse_text,
    parse_text_list,
    require_keys,
    require_object,
    sibling_file,
    source_file,
)

FORMAT = "thumb"
DEFAULT_FILE = "mscoco_THumB-1.0.jsonl"
REFERENCES_FILE = "mscoco_references.json"
DEFAULT_MANIFEST = None
PENALTIES = {"Fl": "fluency", "Inc": "inclusive", "Con": "conciseness"}
FIELDS = ["SYS", "seg_id", "hyp", "image", "P", "R", "Fl", "Inc", "Con", "human_score"]


def parse(path: Path) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    references = _references(sibling_file(source, REFERENCES_FILE, required=True))
    bundle = DatasetBundle(info=_info())
    systems: dict[str, SystemRow] = {}
    items: dict[str, ItemRow] = {}
    seen: set[CaptionKey] = set()
    for line, raw in json_lines(source):
        row = require_object(raw, path=source, line=line)
        require_keys(row, FIELDS, path=source, line=line)
        system_name = parse_text(row["SYS"], path=source, line=line, field="SYS")
        segment = str(row["seg_id"])
        if segment not in references:
            raise ImportFormatError(source, line, "seg_id", f"{segment!r} has no references in {REFERENCES_FILE}")
        image = parse_text(row["image"], path=source, line=line, field="image")
        item = items.setdefault(segment, ItemRow(external_id=segment, media=image, references=references[segment]))
        if item.media != image:
            raise ImportFormatError(source, line, "image", f"seg_id {segment!r} was {item.media!r} before")
        system = systems.setdefault(system_name, _system(system_name))
        key = CaptionKey(item=segment, system=system.slug)
        if key in seen:
            raise ImportFormatError(source, line, "SYS", f"{system_name!r} has two captions for seg_id {segment!r}")
        seen.add(key)
        text = parse_text(row["hyp"], path=source, line=line, field="hyp")
        bundle.captions.append(CaptionRow(key=key, text=normalise_whitespace(text)))
        bundle.judgments += _judgments(row, key, path=source, line=line, warnings=bundle.warnings)
    bundle.systems = list(systems.values())
    bundle.items = list(items.values())
    bundle.media = [
        MediaRow(name=name, kind="image", url=coco_image_url(name))
        for name in dict.fromkeys(i.media for i in bundle.items if i.media is not None)
    ]
    return bundle


def _judgments(row: dict, key: CaptionKey, *, path: Path, line: int, warnings: list[str]) -> list[JudgmentRow]:
    precision = parse_float(row["P"], path=path, line=line, field="P", low=1, high=5)
    recall = parse_float(row["R"], path=path, line=line, field="R", low=1, high=5)
    penalties = {
        name: parse_float(row[field], path=path, line=line, field=field, high=0) for field, name in PENALTIES.items()
    }
    total = parse_float(row["human_score"], path=path, line=line, field="human_score")
    expected = (precision + recall) / 2 + sum(penalties.values())
    if abs(total - expected) > 1e-6:
        warnings.append(f"{path}, line {line}: human_score {total} differs from (P+R)/2 + penalties = {expected}")
    return [
        JudgmentRow(caption=key, dimension="precision", value=precision),
        JudgmentRow(caption=key, dimension="recall", value=recall),
        JudgmentRow(caption=key, dimension="total", value=total, detail=penalties),
    ]


def _references(path: Path) -> dict[str, list[str]]:
    references: dict[str, list[str]] = {}
    for line, raw in json_lines(path):
        row = require_object(raw, path=path, line=line)
        require_keys(row, ["seg_id", "refs"], path=path, line=line)
        refs = parse_text_list(row["refs"], path=path, line=line, field="refs")
        references[str(row["seg_id"])] = [normalise_whitespace(ref) for ref in refs]
    return references


def _system(name: str) -> SystemRow:
    slug = "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")
    return SystemRow(slug=slug, name=name, kind="human" if name.lower() == "human" else "model")


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="thumb",
        title="THumB 1.0 (MSCOCO)",
        source_format=FORMAT,
        modality="image",
        kind="rating",
        dimensions=["precision", "recall", "total"],
        rating_scale={"min": 1, "max": 5},
        description=(
            "Transparent Human Benchmark: 500 MSCOCO images captioned by five systems (four models "
            "and humans), rated for precision and recall with fluency, inclusive-language and "
            "conciseness penalties. A crossed systems x images design, so system-level correlation "
            "is meaningful (5 systems: small n)."
        ),
        citation="J. Kasai et al. (2022). Transparent Human Evaluation for Image Captioning. NAACL.",
        licence="CC BY 4.0 (annotations); images from MSCOCO",
        url="https://github.com/jungokasai/THumB",
        protocol_version="thumb-1",
        protocol_notes=(
            "Judgments on precision, recall and total (penalties kept in the total's detail); Pearson "
            "against each, with and without the Human system's rows."
        ),
    )
