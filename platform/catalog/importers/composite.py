"""Composite (Aditya et al. 2015), the AMT batch files of `AMT_eval.zip`: `8k_correctness.csv`,
`30k_correctness.csv`, `coco_correctness.csv` (and, when present, the matching `*_throughness.csv`),
`;`-separated, one record per image: the image URL in the one `Input.` column that is not a caption,
the rated captions in `Input.text1..N` (3 for Flickr8k, 4 for Flickr30k and COCO) and their 1-5
ratings in `Answer.Q1Answer..QNAnswer`.

The files carry no references: they come from Karpathy's caption files, required beside them
(`dataset_flickr8k.json`, `dataset_flickr30k.json`, `dataset_coco.json`; `images[].filename`,
`images[].sentences[].raw`). Protocol (CLIPScore's 11,985 judgments = 3,995 images x 3): the first
three caption columns are kept, the fourth dropped; the first caption is the image's own human
reference, so the reference it matches is removed from the item's references. docs/datasets.md §2.9."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
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
from catalog.importers.sources import json_document, parse_int, parse_text, require_object, source_file

FORMAT = "composite"
DEFAULT_FILE = "coco_correctness.csv"
DEFAULT_MANIFEST = None
KEPT_COLUMNS = 3


@dataclass(frozen=True)
class Source:
    name: str  # the item metadata "source"
    prefix: str  # the AMT file prefix
    references_file: str
    captions: int  # caption columns in the AMT file


SOURCES = (
    Source("flickr8k", "8k", "dataset_flickr8k.json", 3),
    Source("flickr30k", "30k", "dataset_flickr30k.json", 4),
    Source("coco", "coco", "dataset_coco.json", 4),
)
SYSTEMS = [
    SystemRow(
        slug="composite-caption-1",
        name="Composite caption 1 (human)",
        kind="human",
        description="The first caption column: one of the image's own human references, rated as a candidate.",
    ),
    *(
        SystemRow(
            slug=f"composite-caption-{column}",
            name=f"Composite caption {column}",
            kind="mixed",
            description=f"Caption column {column} of the AMT files: a captioning model's output (which model is not stated in the files).",
        )
        for column in (2, 3)
    ),
]


@dataclass
class _Rated:
    item: ItemRow
    texts: list[str]  # the kept caption columns
    ratings: list[int]


def parse(path: Path) -> DatasetBundle:
    folder = source_file(path, DEFAULT_FILE).parent
    thorough = [folder / f"{source.prefix}_throughness.csv" for source in SOURCES]
    present = [file.is_file() for file in thorough]
    if any(present) and not all(present):
        missing = next(file for file, found in zip(thorough, present, strict=True) if not found)
        raise ImportFormatError(missing, None, None, "file not found (the other *_throughness.csv files are present)")
    dimensions = ["correctness", "thoroughness"] if all(present) else ["correctness"]
    bundle = DatasetBundle(info=_info(dimensions), systems=list(SYSTEMS))
    for source in SOURCES:
        references_file = folder / source.references_file
        if not references_file.is_file():
            raise ImportFormatError(
                references_file,
                None,
                None,
                f"file not found: Composite's references are Karpathy's {source.name} captions "
                f"({source.references_file}), expected beside {source.prefix}_correctness.csv",
            )
        pool = _karpathy_references(references_file)
        correct = _read(folder / f"{source.prefix}_correctness.csv", source, pool, bundle)
        for rated in correct.values():
            bundle.items.append(rated.item)
            _append(bundle, rated, "correctness")
        if "thoroughness" in dimensions:
            through_file = folder / f"{source.prefix}_throughness.csv"
            thorough_rows = _read(through_file, source, pool, DatasetBundle(info=bundle.info))
            for image, rated in thorough_rows.items():
                if image not in correct or correct[image].texts != rated.texts:
                    raise ImportFormatError(
                        through_file,
                        None,
                        None,
                        f"image {image!r}: captions differ from {source.prefix}_correctness.csv",
                    )
                _append(bundle, rated, "thoroughness")
    bundle.media = [MediaRow(name=item.media or "", kind="image") for item in bundle.items]
    return bundle


def _append(bundle: DatasetBundle, rated: _Rated, dimension: str) -> None:
    for column, (text, rating) in enumerate(zip(rated.texts, rated.ratings, strict=True), start=1):
        key = CaptionKey(item=rated.item.external_id, system=f"composite-caption-{column}")
        if dimension == "correctness":
            bundle.captions.append(CaptionRow(key=key, text=text))
        bundle.judgments.append(JudgmentRow(caption=key, dimension=dimension, value=float(rating)))


def _read(path: Path, source: Source, pool: dict[str, list[str]], bundle: DatasetBundle) -> dict[str, _Rated]:
    """The file's records by image file name, with the protocol applied (counts go to the report)."""
    if not path.is_file():
        raise ImportFormatError(path, None, None, "file not found")
    header, records = header_and_records(path, delimiter=";")
    texts = [f"Input.text{i}" for i in range(1, source.captions + 1)]
    answers = [f"Answer.Q{i}Answer" for i in range(1, source.captions + 1)]
    require_columns(path, header, texts + answers)
    urls = [name for name in header if name.startswith("Input.") and not re.fullmatch(r"Input\.text\d+", name)]
    if len(urls) != 1:
        raise ImportFormatError(path, 1, None, f"expected one image URL column besides Input.textN, found {urls}")
    by_number = {_number(name): name for name in pool}
    found: dict[str, _Rated] = {}
    lines: dict[str, int] = {}
    for record in records:
        row, line = record.values, record.line
        url = row[urls[0]].strip()
        if not url and not any(row[name].strip() for name in texts):
            bundle.report[f"{source.name}_blank_records_skipped"] = (
                bundle.report.get(f"{source.name}_blank_records_skipped", 0) + 1
            )
            continue
        base = url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        image = base if base in pool else by_number.get(_number(base))
        if image is None:
            raise ImportFormatError(path, line, urls[0], f"image {base!r} is not in {source.references_file}")
        if image in lines:
            raise ImportFormatError(path, line, urls[0], f"image {image!r} again (first at line {lines[image]})")
        lines[image] = line
        captions = [
            normalise_whitespace(parse_text(row[name], path=path, line=line, field=name))
            for name in texts[:KEPT_COLUMNS]
        ]
        ratings = [parse_int(row[name], path=path, line=line, field=name, low=1, high=5) for name in answers]
        references, exact = _without_human(pool[image], captions[0])
        key = "human_caption_matched_exactly" if exact else "human_caption_matched_nearest"
        bundle.report[key] = bundle.report.get(key, 0) + 1
        bundle.report["fourth_caption_dropped"] = bundle.report.get("fourth_caption_dropped", 0) + max(
            0, source.captions - KEPT_COLUMNS
        )
        found[image] = _Rated(
            item=ItemRow(
                external_id=f"{source.name}/{image}",
                media=image,
                references=references,
                metadata={"source": source.name},
            ),
            texts=captions,
            ratings=ratings[:KEPT_COLUMNS],
        )
    return found


def _without_human(references: list[str], human: str) -> tuple[list[str], bool]:
    """The references minus the one the human candidate is (equal ignoring case and punctuation, else
    the most similar), and whether the match was exact."""
    wanted = _plain(human)
    for index, reference in enumerate(references):
        if _plain(reference) == wanted:
            return references[:index] + references[index + 1 :], True
    ratios = [difflib.SequenceMatcher(None, _plain(reference), wanted).ratio() for reference in references]
    index = ratios.index(max(ratios))
    return references[:index] + references[index + 1 :], False


def _plain(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _number(name: str) -> str:
    """The photo number in a file name: Flickr's leading digits, COCO's last digit run (no zeros)."""
    if name.startswith("COCO_"):
        digits = re.findall(r"\d+", name)
        return "coco:" + (digits[-1].lstrip("0") if digits else "")
    match = re.match(r"\d+", name)
    return "flickr:" + (match.group(0) if match else name)


def _karpathy_references(path: Path) -> dict[str, list[str]]:
    document = require_object(json_document(path), path=path, line=None)
    images = document.get("images")
    if not isinstance(images, list):
        raise ImportFormatError(path, None, "images", "expected a list (Karpathy's caption file)")
    pool: dict[str, list[str]] = {}
    for index, raw in enumerate(images):
        entry = require_object(raw, path=path, line=None, field=f"images[{index}]")
        name = parse_text(entry.get("filename"), path=path, line=None, field=f"images[{index}].filename")
        sentences = entry.get("sentences")
        if not isinstance(sentences, list) or not sentences:
            raise ImportFormatError(path, None, f"images[{index}].sentences", "expected a non-empty list")
        pool[name] = [
            normalise_whitespace(
                parse_text(
                    require_object(s, path=path, line=None, field=f"images[{index}].sentences[{j}]").get("raw"),
                    path=path,
                    line=None,
                    field=f"images[{index}].sentences[{j}].raw",
                )
            )
            for j, s in enumerate(sentences)
        ]
    return pool


def _info(dimensions: list[str]) -> DatasetInfo:
    return DatasetInfo(
        slug="composite",
        title="Composite",
        source_format=FORMAT,
        modality="image",
        kind="rating",
        dimensions=dimensions,
        rating_scale={"min": 1, "max": 5},
        description=(
            "Crowd (AMT) ratings of captions for 3,995 images from Flickr8k (997), Flickr30k (991) and "
            "MSCOCO (2,007): one human reference and captioning models' outputs per image, rated 1-5 "
            "for correctness (and thoroughness). 11,985 correctness judgments in the standard protocol."
        ),
        citation=(
            "S. Aditya, Y. Yang, C. Baral, C. Fermuller and Y. Aloimonos (2015). From Images to Sentences "
            "through Scene Description Graphs using Commonsense Reasoning and Knowledge. arXiv:1511.03292."
        ),
        licence=(
            "ratings: research use, no licence stated (AMT_eval.zip); references: Flickr8k research licence, "
            "Flickr30k terms, MSCOCO CC BY 4.0; images: Flickr terms"
        ),
        url="https://imagesdg.wordpress.com/image-to-scene-description-graph/",
        protocol_version="composite-1",
        protocol_notes=(
            "Items = images (external id <source>/<file name>, metadata source); the first three caption "
            "columns are kept (systems composite-caption-1..3), the fourth (Flickr30k, COCO) dropped: "
            "3 judgments per image per dimension. Caption 1 is a human reference: the reference it "
            "matches (ignoring case and punctuation, else the most similar) is removed from the item's "
            "references. Published numbers (CLIPScore, PAC-S, HICE-S): Kendall tau-c (PAC-S also tau-b) "
            "over the 11,985 correctness judgments."
        ),
    )
