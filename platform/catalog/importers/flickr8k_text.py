"""What Flickr8k-Expert and Flickr8k-CF share: the caption file and the dataset's description."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.importers.bundle import DatasetInfo, MediaRow, SystemRow, normalise_whitespace
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import text_lines

TOKEN_FILE = "Flickr8k.token.txt"
CHECKSUM_FILE = "flickr8k_checksum.txt"
CITATION = (
    "M. Hodosh, P. Young and J. Hockenmaier (2013). Framing Image Description as a Ranking Task: "
    "Data, Models and Evaluation Metrics. Journal of Artificial Intelligence Research 47, 853-899."
)
LICENCE = "Flickr8k research licence (non-commercial research use; see the dataset's readme)"
URL = "https://hockenmaier.cs.illinois.edu/8k-pictures.html"
CAPTION_ID = re.compile(r"^(?P<image>[^#\s]+)#(?P<index>[0-9]+)$")

# The judged captions were written by people for other images and retrieved for this one.
RETRIEVED_SYSTEM = SystemRow(
    slug="retrieved-human-captions",
    name="Retrieved human captions",
    kind="human",
    description="Captions written by people for other Flickr8k images, retrieved for the judged image.",
)


@dataclass
class Flickr8kCaptions:
    text_by_id: dict[str, str]
    references_by_image: dict[str, list[str]]


def read_captions(path: Path) -> Flickr8kCaptions:
    """`<image>#<n>\\t<caption>` lines; references are ordered by n and whitespace-normalised."""
    text_by_id: dict[str, str] = {}
    indexed: dict[str, list[tuple[int, str]]] = {}
    for number, line in text_lines(path):
        if not line.strip():
            continue
        caption_id, separator, text = line.partition("\t")
        match = CAPTION_ID.match(caption_id)
        if not separator or not match:
            raise ImportFormatError(
                path, number, "caption_id", f"expected '<image>#<n><TAB><caption>', found {line[:60]!r}"
            )
        if not text.strip():
            raise ImportFormatError(path, number, "caption", "empty caption")
        if caption_id in text_by_id:
            raise ImportFormatError(path, number, "caption_id", f"{caption_id!r} listed twice")
        text_by_id[caption_id] = normalise_whitespace(text)
        indexed.setdefault(match["image"], []).append((int(match["index"]), text_by_id[caption_id]))
    references = {image: [text for _, text in sorted(rows)] for image, rows in indexed.items()}
    return Flickr8kCaptions(text_by_id=text_by_id, references_by_image=references)


def judged_caption(captions: Flickr8kCaptions, caption_id: str, *, path: Path, line: int) -> str:
    if not CAPTION_ID.match(caption_id):
        raise ImportFormatError(path, line, "caption_id", f"expected '<image>#<n>', found {caption_id!r}")
    if caption_id not in captions.text_by_id:
        raise ImportFormatError(path, line, "caption_id", f"{caption_id!r} is not in {TOKEN_FILE}")
    return captions.text_by_id[caption_id]


def judged_image(captions: Flickr8kCaptions, image: str, *, path: Path, line: int) -> str:
    if image not in captions.references_by_image:
        raise ImportFormatError(path, line, "image", f"{image!r} has no reference captions in {TOKEN_FILE}")
    return image


def image_media(images: list[str]) -> list[MediaRow]:
    return [MediaRow(name=image, kind="image") for image in images]


def dataset_info(**fields: Any) -> DatasetInfo:
    """What both Flickr8k judgment sets share; each passes its own slug, title, scale and notes."""
    shared: dict[str, Any] = {
        "modality": "image",
        "kind": "rating",
        "dimensions": ["overall"],
        "citation": CITATION,
        "licence": LICENCE,
        "url": URL,
        "protocol_version": "clipscore-1",
    }
    return DatasetInfo(**{**shared, **fields})
