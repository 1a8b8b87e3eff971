"""Pascal-50S (`pascal_50s.json` + `pascal50S_refs.json`): 4,000 caption pairs in four categories.

Items are the images, with the 50-reference pool as references; each pair keeps the fixed draw
of 5 references that the processed file ships. Label 0 means the first caption won.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    MediaRow,
    PairRow,
    SystemRow,
    normalise_whitespace,
)
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import (
    json_document,
    parse_int,
    parse_text,
    parse_text_list,
    require_keys,
    require_object,
    sibling_file,
    source_file,
)

FORMAT = "pascal50s"
DEFAULT_FILE = "pascal_50s.json"
REFERENCE_POOL_FILE = "pascal50S_refs.json"
DEFAULT_MANIFEST = "pascal_50s_checksum.txt"
CATEGORIES = ("HC", "HI", "HM", "MM")
SYSTEM = SystemRow(
    slug="pascal50s-candidates",
    name="Pascal-50S candidates",
    kind="mixed",
    description="Human-written and machine-generated candidates; the file does not say which is which.",
)


def parse(path: Path) -> DatasetBundle:
    pairs_file = source_file(path, DEFAULT_FILE)
    pool = _reference_pool(sibling_file(pairs_file, REFERENCE_POOL_FILE, required=True))
    document = require_object(json_document(pairs_file), path=pairs_file, line=None)
    bundle = DatasetBundle(info=_info(), systems=[SYSTEM])
    captions: dict[CaptionKey, CaptionRow] = {}
    images: dict[str, None] = {}
    for category in document:
        if category not in CATEGORIES:
            raise ImportFormatError(
                pairs_file, None, category, f"unknown category (expected one of {', '.join(CATEGORIES)})"
            )
    for category in CATEGORIES:
        for index, raw in enumerate(document.get(category, [])):
            where = f"{category}[{index}]"
            pair = require_object(raw, path=pairs_file, line=None, field=where)
            require_keys(pair, ["image", "captions", "label", "references"], path=pairs_file, line=None)
            image = Path(parse_text(pair["image"], path=pairs_file, line=None, field=f"{where}.image")).name
            if image not in pool:
                raise ImportFormatError(
                    pairs_file, None, f"{where}.image", f"{image!r} has no reference pool in {REFERENCE_POOL_FILE}"
                )
            texts = parse_text_list(pair["captions"], path=pairs_file, line=None, field=f"{where}.captions")
            if len(texts) != 2:
                raise ImportFormatError(
                    pairs_file, None, f"{where}.captions", f"expected 2 captions, found {len(texts)}"
                )
            label = parse_int(pair["label"], path=pairs_file, line=None, field=f"{where}.label", low=0, high=1)
            draw = parse_text_list(pair["references"], path=pairs_file, line=None, field=f"{where}.references")
            images.setdefault(image)
            keys = [_caption(captions, image, text) for text in texts]
            bundle.pairs.append(
                PairRow(
                    external_id=f"{category}-{index:04d}",
                    item=image,
                    caption_a=keys[0],
                    caption_b=keys[1],
                    category=category,
                    winner="a" if label == 0 else "b",
                    references=[normalise_whitespace(ref) for ref in draw],
                )
            )
    bundle.items = [ItemRow(external_id=image, media=image, references=pool[image]) for image in images]
    bundle.media = [MediaRow(name=image, kind="image") for image in images]
    bundle.captions = list(captions.values())
    return bundle


def _caption(captions: dict[CaptionKey, CaptionRow], image: str, text: str) -> CaptionKey:
    """Identical candidate texts of one image are one caption (scored once), keyed by a text hash."""
    text = normalise_whitespace(text)
    key = CaptionKey(item=image, system=SYSTEM.slug, external_id="t" + hashlib.sha1(text.encode()).hexdigest()[:16])
    captions.setdefault(key, CaptionRow(key=key, text=text))
    return key


def _reference_pool(path: Path) -> dict[str, list[str]]:
    document = require_object(json_document(path), path=path, line=None)
    return {
        Path(image).name: [
            normalise_whitespace(ref) for ref in parse_text_list(refs, path=path, line=None, field=image)
        ]
        for image, refs in document.items()
    }


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="pascal50s",
        title="Pascal-50S",
        source_format=FORMAT,
        modality="image",
        kind="pairwise",
        dimensions=["preference"],
        description=(
            "Which of two captions is closer to a human consensus, for 1,000 pairs in each of four "
            "categories: HC (two correct human), HI (human correct vs incorrect), HM (human vs "
            "machine), MM (two machine). Statistic: accuracy per category and their mean."
        ),
        citation=(
            "R. Vedantam, C. L. Zitnick and D. Parikh (2015). CIDEr: Consensus-based Image Description "
            "Evaluation. CVPR."
        ),
        licence="research use; images from PASCAL VOC (Flickr terms)",
        url="https://vrama91.github.io/cider/",
        protocol_version="pascal50s-1",
        protocol_notes=(
            "Item references are the 50-sentence pool; each pair keeps the single 5-reference draw "
            "shipped with the processed file (the published protocol averages 5 random draws from "
            "the pool). Label 0 = first caption wins (stored as winner 'a')."
        ),
    )
