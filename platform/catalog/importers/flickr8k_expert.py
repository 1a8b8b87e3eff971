"""Flickr8k-Expert (`ExpertAnnotations.txt` + `Flickr8k.token.txt`), CLIPScore/PAC-S protocol.

Rows whose judged caption is one of the judged image's own references (compared by text) are
dropped; each of the three expert scores becomes its own judgment; references are the judged
image's captions, whitespace-normalised.
"""

from __future__ import annotations

from pathlib import Path

from catalog.importers import flickr8k_text as flickr8k
from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    JudgmentRow,
)
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import parse_int, sibling_file, source_file, tsv_rows

FORMAT = "flickr8k-expert"
DEFAULT_FILE = "ExpertAnnotations.txt"
DEFAULT_MANIFEST = flickr8k.CHECKSUM_FILE
EXPERTS = ("expert_1", "expert_2", "expert_3")


def parse(path: Path) -> DatasetBundle:
    annotations = source_file(path, DEFAULT_FILE)
    captions = flickr8k.read_captions(sibling_file(annotations, flickr8k.TOKEN_FILE, required=True))
    bundle = DatasetBundle(info=_info(), systems=[flickr8k.RETRIEVED_SYSTEM])
    system = flickr8k.RETRIEVED_SYSTEM.slug
    seen: set[tuple[str, str]] = set()
    images: dict[str, None] = {}  # judged images in order of first appearance
    excluded = 0
    for line, row in tsv_rows(annotations, ["image", "caption_id", *EXPERTS]):
        image = flickr8k.judged_image(captions, row["image"], path=annotations, line=line)
        text = flickr8k.judged_caption(captions, row["caption_id"], path=annotations, line=line)
        scores = [
            parse_int(row[expert], path=annotations, line=line, field=expert, low=1, high=4) for expert in EXPERTS
        ]
        if (image, row["caption_id"]) in seen:
            raise ImportFormatError(
                annotations, line, "caption_id", f"{row['caption_id']!r} judged twice for {image!r}"
            )
        seen.add((image, row["caption_id"]))
        if text in captions.references_by_image[image]:
            excluded += 1
            continue
        images.setdefault(image)
        key = CaptionKey(item=image, system=system, external_id=row["caption_id"])
        bundle.captions.append(CaptionRow(key=key, text=text))
        bundle.judgments += [
            JudgmentRow(caption=key, dimension="overall", annotator=expert, value=float(score))
            for expert, score in zip(EXPERTS, scores, strict=True)
        ]
    bundle.items = [
        ItemRow(external_id=image, media=image, references=list(captions.references_by_image[image]))
        for image in images
    ]
    bundle.media = flickr8k.image_media(list(images))
    bundle.report["rows_excluded_self_reference"] = excluded
    return bundle


def _info() -> DatasetInfo:
    return flickr8k.dataset_info(
        slug="flickr8k-expert",
        title="Flickr8k-Expert",
        source_format=FORMAT,
        rating_scale={"min": 1, "max": 4},
        description=(
            "Expert judgments (1-4) of how well a caption describes a Flickr8k image; three experts "
            "per caption. Headline statistic: Kendall tau-c over all 16,992 scores."
        ),
        protocol_notes=(
            "Rows whose candidate text equals one of the judged image's own references are dropped "
            "(158 in the original file); each expert score is its own judgment; references are the "
            "judged image's five captions, whitespace-normalised."
        ),
    )
