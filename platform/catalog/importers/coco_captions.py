"""COCO Captions (`captions_val2014.json`, `captions_train2014.json`, `captions_val2017.json`, …): a
captioner benchmark. One item per image (external id = the integer image id as a string, as COCO
results files write `image_id`), its captions in annotation-id order as references.

An image without any caption is refused, not skipped: a benchmark item without references cannot be
scored by the reference-based metrics (docs/datasets.md §6.1), and COCO's caption files give every
image at least five, so a captionless image means a wrong file (an image-info file such as
`image_info_test2014.json`, whose captions are withheld)."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, ItemRow, MediaRow, normalise_whitespace
from catalog.importers.coco_style import CocoDocument, read_coco
from catalog.importers.errors import ImportFormatError
from catalog.importers.media_urls import image_url
from catalog.importers.sources import source_file

FORMAT = "coco-captions"
DEFAULT_FILE = "captions_val2014.json"
DEFAULT_MANIFEST = None


def parse(path: Path) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    coco = read_coco(source)
    part = _part(source)
    bundle = DatasetBundle(info=_info(part))
    bundle.items = benchmark_items(coco, what="COCO caption file")
    bundle.media = [
        MediaRow(name=image.file_name, kind="image", url=image_url(image.file_name, image.fields))
        for image in coco.images
    ]
    return bundle


def benchmark_items(coco: CocoDocument, *, what: str) -> list[ItemRow]:
    """One item per image of a COCO-style caption file, in file order: external id the image id,
    media its file name, references its captions in annotation-id order (whitespace-normalised).
    An image without captions is an error naming it."""
    grouped = coco.annotations_by_image()
    items = []
    for image in coco.images:
        annotations = grouped[image.id]
        if not annotations:
            raise ImportFormatError(
                coco.path,
                None,
                image.where,
                f"image {image.id} ({image.file_name}) has no caption in this {what}; a benchmark item "
                "needs references",
            )
        items.append(
            ItemRow(
                external_id=str(image.id),
                media=image.file_name,
                references=[normalise_whitespace(annotation.caption) for annotation in annotations],
            )
        )
    return items


def _part(source: Path) -> str:
    """`captions_val2014.json` → `val2014`; any other name → its stem, slug-shaped."""
    stem = source.stem.lower()
    stem = stem.removeprefix("captions_")
    return re.sub(r"[^a-z0-9]+", "-", stem).strip("-") or "captions"


def _info(part: str) -> DatasetInfo:
    return DatasetInfo(
        slug=f"coco-captions-{part}",
        title=f"COCO Captions ({part})",
        source_format=FORMAT,
        modality="image",
        kind="benchmark",
        dimensions=[],
        rating_scale={},
        description=(
            "Microsoft COCO Captions: everyday scenes, each image with (at least) five crowd-sourced "
            "English captions. A captioner benchmark: submit one caption per image (results file "
            '`[{"image_id": <int>, "caption": "..."}]`), scored against these references.'
        ),
        citation=(
            "X. Chen, H. Fang, T.-Y. Lin, R. Vedantam, S. Gupta, P. Dollár and C. L. Zitnick (2015). "
            "Microsoft COCO Captions: Data Collection and Evaluation Server. arXiv:1504.00325. "
            "T.-Y. Lin et al. (2014). Microsoft COCO: Common Objects in Context. ECCV."
        ),
        licence="annotations CC BY 4.0 (COCO Consortium); images under their own Flickr licences (the file's `licenses`)",
        url="https://cocodataset.org/#download",
        protocol_version="coco-captions-1",
        protocol_notes=(
            "Items are the file's images in file order (external id = image id, media = file_name); "
            "references are each image's captions in annotation-id order, whitespace-normalised. "
            "Dropped: info, licenses, image size/date/URLs/licence ids, annotation ids. "
            "An image without captions is refused."
        ),
    )
