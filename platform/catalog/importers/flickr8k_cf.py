"""Flickr8k-CF (`CrowdFlowerAnnotations.txt` + `Flickr8k.token.txt`), CLIPScore/PAC-S protocol.

No row is dropped; the rating is the yes-fraction. Any reference of an image whose text equals a
caption judged for that image is removed from the image's references, for all its rows (images end
with 5, 4 or 3 references).
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
from catalog.importers.sources import parse_float, parse_int, sibling_file, source_file, tsv_rows

FORMAT = "flickr8k-cf"
DEFAULT_FILE = "CrowdFlowerAnnotations.txt"
DEFAULT_MANIFEST = flickr8k.CHECKSUM_FILE
FIELDS = ["image", "caption_id", "yes_fraction", "yes_votes", "no_votes"]


def parse(path: Path) -> DatasetBundle:
    annotations = source_file(path, DEFAULT_FILE)
    captions = flickr8k.read_captions(sibling_file(annotations, flickr8k.TOKEN_FILE, required=True))
    bundle = DatasetBundle(info=_info(), systems=[flickr8k.RETRIEVED_SYSTEM])
    system = flickr8k.RETRIEVED_SYSTEM.slug
    judged_texts: dict[str, set[str]] = {}
    seen: set[tuple[str, str]] = set()
    for line, row in tsv_rows(annotations, FIELDS):
        image = flickr8k.judged_image(captions, row["image"], path=annotations, line=line)
        text = flickr8k.judged_caption(captions, row["caption_id"], path=annotations, line=line)
        fraction, yes, no = _votes(row, path=annotations, line=line)
        if (image, row["caption_id"]) in seen:
            raise ImportFormatError(
                annotations, line, "caption_id", f"{row['caption_id']!r} judged twice for {image!r}"
            )
        seen.add((image, row["caption_id"]))
        judged_texts.setdefault(image, set()).add(text)
        key = CaptionKey(item=image, system=system, external_id=row["caption_id"])
        bundle.captions.append(CaptionRow(key=key, text=text))
        bundle.judgments.append(
            JudgmentRow(
                caption=key, dimension="overall", annotator="crowd", value=fraction, detail={"yes": yes, "no": no}
            )
        )
    removed = 0
    for image, texts in judged_texts.items():
        references = [ref for ref in captions.references_by_image[image] if ref not in texts]
        removed += len(captions.references_by_image[image]) - len(references)
        bundle.items.append(ItemRow(external_id=image, media=image, references=references))
    bundle.media = flickr8k.image_media(list(judged_texts))
    bundle.report["references_removed_as_judged"] = removed
    return bundle


def _votes(row: dict[str, str], *, path: Path, line: int) -> tuple[float, int, int]:
    fraction = parse_float(row["yes_fraction"], path=path, line=line, field="yes_fraction", low=0, high=1)
    yes = parse_int(row["yes_votes"], path=path, line=line, field="yes_votes", low=0)
    no = parse_int(row["no_votes"], path=path, line=line, field="no_votes", low=0)
    if yes + no == 0:
        raise ImportFormatError(path, line, "yes_votes", "no votes recorded (yes + no = 0)")
    if abs(fraction - yes / (yes + no)) > 1e-6:
        raise ImportFormatError(
            path, line, "yes_fraction", f"{fraction} does not equal yes/(yes+no) = {yes}/{yes + no}"
        )
    return fraction, yes, no


def _info() -> DatasetInfo:
    return flickr8k.dataset_info(
        slug="flickr8k-cf",
        title="Flickr8k-CF",
        source_format=FORMAT,
        rating_scale={"min": 0, "max": 1},
        description=(
            "Crowd (CrowdFlower) yes/no judgments of whether a caption describes a Flickr8k image; "
            "the rating is the fraction of yes votes. Headline statistic: Kendall tau-b."
        ),
        protocol_notes=(
            "No rows dropped; rating = yes-fraction (vote counts kept in the judgment detail). A "
            "reference whose text equals a caption judged for the same image is removed from that "
            "image's references for all of its rows."
        ),
    )
