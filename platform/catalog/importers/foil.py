"""FOIL-COCO (Shekhar et al., ACL 2017), `foilv1.0_test_2017.json` + COCO's `captions_val2014.json`.

The FOIL file is COCO-style; each annotation has `id`, `foil_id`, `image_id`, `caption`,
`target_word`, `foil_word` and `foil` (bool). An original caption and the foils made from it share
the annotation `id` (that is the pairing the Polos and DENEB evaluation code uses); every foil forms
its own pair with its original (caption a, the winner) and the foil (caption b).

Items are the original captions (external id = the shared `id`), media the COCO image. References
are the image's COCO val2014 captions in file order minus the original's text (normally 4): the
"4 refs" setting, which the board scores with. Each pair keeps the first of them as its reference
draw: the "1 ref" setting. docs/datasets.md §2.8."""

from __future__ import annotations

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
from catalog.importers.coco_style import CocoAnnotation, read_coco
from catalog.importers.errors import ImportFormatError
from catalog.importers.media_urls import coco_image_url
from catalog.importers.sources import sibling_file, source_file

FORMAT = "foil"
DEFAULT_FILE = "foilv1.0_test_2017.json"
COCO_CAPTIONS_FILE = "captions_val2014.json"
DEFAULT_MANIFEST = None
ORIGINALS = SystemRow(
    slug="coco-original",
    name="COCO original captions",
    kind="human",
    description="The MSCOCO caption each foil was made from (the correct caption of every pair).",
)
FOILS = SystemRow(
    slug="foil-captions",
    name="FOIL captions",
    kind="mixed",
    description="An original caption with one noun replaced by a wrong one (the foil word).",
)


def parse(path: Path) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    coco_file = sibling_file(source, COCO_CAPTIONS_FILE, required=True)
    foil = read_coco(source, unique_annotation_ids=False)
    references = _coco_references(coco_file)
    images = {image.id: image for image in foil.images}
    groups: dict[int, list[CocoAnnotation]] = {}
    for annotation in foil.annotations:
        groups.setdefault(annotation.id, []).append(annotation)
    bundle = DatasetBundle(info=_info(), systems=[ORIGINALS, FOILS])
    media: dict[str, None] = {}
    for group_id, members in groups.items():
        original, foils = _split(source, group_id, members)
        image = images[original.image_id]
        if original.image_id not in references:
            raise ImportFormatError(
                coco_file, None, None, f"no captions of image {original.image_id} (needed by {original.where})"
            )
        text = normalise_whitespace(original.caption)
        refs = [ref for ref in references[original.image_id] if ref != text]
        if len(refs) == len(references[original.image_id]):  # the original is not among them: said, kept all
            bundle.warnings.append(
                f"{source}: {original.where}: the original caption is not among image {original.image_id}'s "
                "COCO captions, so all of them stay as references"
            )
            bundle.report["originals_not_found_among_references"] = (
                bundle.report.get("originals_not_found_among_references", 0) + 1
            )
        if not refs:
            raise ImportFormatError(
                coco_file, None, None, f"image {original.image_id} has no caption other than {original.where}'s"
            )
        item = str(group_id)
        original_key = CaptionKey(item=item, system=ORIGINALS.slug)
        bundle.captions.append(CaptionRow(key=original_key, text=text))
        words = {}
        for annotation in foils:
            foil_id = _foil_id(source, annotation)
            key = CaptionKey(item=item, system=FOILS.slug, external_id=str(foil_id))
            bundle.captions.append(CaptionRow(key=key, text=normalise_whitespace(annotation.caption)))
            words[str(foil_id)] = {
                "target_word": _word(source, annotation, "target_word"),
                "foil_word": _word(source, annotation, "foil_word"),
            }
            bundle.pairs.append(
                PairRow(
                    external_id=f"{group_id}-{foil_id}",
                    item=item,
                    caption_a=original_key,
                    caption_b=key,
                    winner="a",
                    references=refs[:1],
                )
            )
        bundle.items.append(
            ItemRow(
                external_id=item,
                media=image.file_name,
                references=refs,
                metadata={"image_id": original.image_id, "foils": words},
            )
        )
        media.setdefault(image.file_name)
    bundle.media = [MediaRow(name=name, kind="image", url=coco_image_url(name)) for name in media]
    bundle.report["originals"] = len(bundle.items)
    bundle.report["images"] = len(media)
    return bundle


def _split(path: Path, group_id: int, annotations: list[CocoAnnotation]) -> tuple[CocoAnnotation, list[CocoAnnotation]]:
    """The group's one original and its foils, all of the same image."""
    originals: list[CocoAnnotation] = []
    foils: list[CocoAnnotation] = []
    for annotation in annotations:
        flag = annotation.fields.get("foil")
        if not isinstance(flag, bool):
            raise ImportFormatError(path, None, f"{annotation.where}.foil", f"expected true or false, found {flag!r}")
        (foils if flag else originals).append(annotation)
    where = annotations[0].where
    if len(originals) != 1:
        raise ImportFormatError(
            path, None, f"{where}.id", f"annotation id {group_id} has {len(originals)} original captions (expected 1)"
        )
    if not foils:
        raise ImportFormatError(path, None, f"{where}.id", f"annotation id {group_id} has no foil caption")
    for annotation in foils:
        if annotation.image_id != originals[0].image_id:
            raise ImportFormatError(
                path,
                None,
                f"{annotation.where}.image_id",
                f"image {annotation.image_id}, but its original ({originals[0].where}) is of image "
                f"{originals[0].image_id}",
            )
    return originals[0], foils


def _foil_id(path: Path, annotation: CocoAnnotation) -> int:
    value = annotation.fields.get("foil_id")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ImportFormatError(path, None, f"{annotation.where}.foil_id", f"expected an integer, found {value!r}")
    return value


def _word(path: Path, annotation: CocoAnnotation, key: str) -> str:
    value = annotation.fields.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ImportFormatError(path, None, f"{annotation.where}.{key}", f"expected a word, found {value!r}")
    return value


def _coco_references(path: Path) -> dict[int, list[str]]:
    """Each image's COCO captions in file order (the order the "1 ref" setting takes the first of)."""
    coco = read_coco(path)
    references: dict[int, list[str]] = {}
    for annotation in coco.annotations:
        references.setdefault(annotation.image_id, []).append(normalise_whitespace(annotation.caption))
    return references


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="foil",
        title="FOIL-COCO (test)",
        source_format=FORMAT,
        modality="image",
        kind="foil",
        dimensions=["preference"],
        description=(
            "MSCOCO captions paired with 'foil' captions that differ in one noun (the foil word), "
            "which makes the caption wrong for the image. A metric should score the original above "
            "its foil; statistic: pairwise accuracy over all pairs."
        ),
        citation=(
            "R. Shekhar, S. Pezzelle, Y. Klimovich, A. Herbelot, M. Nabi, E. Sangineto and R. Bernardi "
            "(2017). FOIL it! Find One mismatch between Image and Language caption. ACL, 255-265."
        ),
        licence=(
            "FOIL annotations: CC BY 4.0 (University of Trento); MSCOCO captions: CC BY 4.0; images: "
            "Flickr terms of use"
        ),
        url="https://foilunitn.github.io/",
        protocol_version="foil-1",
        protocol_notes=(
            "Pairs: every foil with its original (same annotation id), caption a = original = winner. "
            "Item references = the image's COCO val2014 captions minus the original's text (4 refs); "
            "each pair's reference draw = the first of them (1 ref). Published numbers (PAC-S, Polos, "
            "HICE-S, G-VEval): accuracy with 1 ref and with 4 refs; correct iff the original scores "
            "strictly higher. No category: the file has no class for the foil word (target and foil "
            "words are kept in item metadata 'foils')."
        ),
    )
