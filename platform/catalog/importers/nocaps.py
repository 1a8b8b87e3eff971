"""nocaps validation captions (`nocaps_val_4500_captions.json`, COCO-style): a captioner benchmark of
4,500 Open Images pictures, each with ten captions and a domain (in-, near- or out-domain relative to
COCO's classes), kept as the item's `metadata["domain"]`.

The image-info files (`nocaps_test_image_info.json`, `nocaps_val_image_info.json`) have no
annotations: the authors withhold those references for their evaluation server. Such a file is
refused with that reason rather than imported with empty references, since every reference-based
metric fails on an item without references (docs/datasets.md §6.3)."""

from __future__ import annotations

from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, MediaRow
from catalog.importers.coco_captions import benchmark_items
from catalog.importers.coco_style import read_coco
from catalog.importers.errors import ImportFormatError
from catalog.importers.media_urls import image_url
from catalog.importers.sources import source_file

FORMAT = "nocaps"
DEFAULT_FILE = "nocaps_val_4500_captions.json"
DEFAULT_MANIFEST = None
DOMAINS = ("in-domain", "near-domain", "out-domain")
WITHHELD = (
    "has no 'annotations': an image-info file (the nocaps test split, or the validation image info) "
    "whose references the nocaps authors keep for their evaluation server (EvalAI). CapBench scores "
    f"submissions against references, so only the validation captions file ({DEFAULT_FILE}) can be "
    "imported"
)


def parse(path: Path) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    coco = read_coco(source, annotations_required=False)
    if "annotations" not in coco.document:
        raise ImportFormatError(source, None, "annotations", WITHHELD)
    bundle = DatasetBundle(info=_info())
    bundle.items = benchmark_items(coco, what="nocaps caption file")
    for image, item in zip(coco.images, bundle.items, strict=True):
        domain = image.fields.get("domain")
        if domain not in DOMAINS:
            raise ImportFormatError(
                source, None, f"{image.where}.domain", f"expected one of {', '.join(DOMAINS)}, found {domain!r}"
            )
        item.metadata = {"domain": domain}
    bundle.media = [
        MediaRow(name=image.file_name, kind="image", url=image_url(image.file_name, image.fields))
        for image in coco.images
    ]
    counts = {domain: sum(item.metadata["domain"] == domain for item in bundle.items) for domain in DOMAINS}
    bundle.report.update({f"images_{domain.replace('-', '_')}": count for domain, count in counts.items()})
    return bundle


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="nocaps-val",
        title="nocaps (validation)",
        source_format=FORMAT,
        modality="image",
        kind="benchmark",
        dimensions=[],
        rating_scale={},
        description=(
            "Novel object captioning at scale: Open Images pictures whose objects are often absent from "
            "COCO's training captions, each with ten human captions. Images are in-domain (only COCO "
            "classes), near-domain or out-domain (no COCO classes); the validation set has 4,500 images "
            "(648 / 2,938 / 914). Submit one caption per image id."
        ),
        citation=(
            "H. Agrawal, K. Desai, Y. Wang, X. Chen, R. Jain, M. Johnson, D. Batra, D. Parikh, S. Lee and "
            "P. Anderson (2019). nocaps: novel object captioning at scale. ICCV."
        ),
        licence="annotations: terms not stated on nocaps.org; images from Open Images (listed as CC BY 2.0 each)",
        url="https://nocaps.org/download",
        protocol_version="nocaps-1",
        protocol_notes=(
            "Items are the images in file order (external id = image id, media = file_name, metadata "
            "{'domain': ...}); references are each image's captions in annotation-id order, "
            "whitespace-normalised. Dropped: info, licenses, open_images_id, coco_url, sizes, dates. "
            "Files without annotations (the test split) are refused: their references are withheld."
        ),
    )
