"""Reading COCO-style caption annotation files strictly: the shape of COCO's `captions_*.json`,
which nocaps and FOIL also use (`{"images": [{"id", "file_name", ...}], "annotations": [{"id",
"image_id", "caption", ...}], ...}`).

The reader checks the shape only (ids are integers and unique, every annotation names a listed
image, captions are text) and keeps every entry's other fields for the importer that needs them
(nocaps' `domain`, FOIL's `foil` flag). Errors name the JSON path, e.g. `annotations[12].image_id`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import json_document, parse_int, parse_text, require_object


@dataclass(frozen=True)
class CocoImage:
    id: int
    file_name: str
    where: str  # its JSON path, "images[3]"
    fields: dict = field(repr=False)  # the whole entry as written


@dataclass(frozen=True)
class CocoAnnotation:
    id: int
    image_id: int
    caption: str  # as written (not normalised)
    where: str  # its JSON path, "annotations[12]"
    fields: dict = field(repr=False)


@dataclass
class CocoDocument:
    path: Path
    images: list[CocoImage]  # in file order
    annotations: list[CocoAnnotation]  # in file order
    document: dict  # the whole file, for top-level keys such as "info"

    def annotations_by_image(self) -> dict[int, list[CocoAnnotation]]:
        """Every image's annotations in annotation-id order (file order among equal ids); an image
        without any has an empty list. Keys follow the order of `images`."""
        grouped: dict[int, list[CocoAnnotation]] = {image.id: [] for image in self.images}
        for annotation in sorted(self.annotations, key=_by_id):
            grouped[annotation.image_id].append(annotation)
        return grouped


def read_coco(path: Path, *, annotations_required: bool = True, unique_annotation_ids: bool = True) -> CocoDocument:
    """The images and annotations of a COCO-style file, checked.

    `annotations_required=False` accepts a file without an "annotations" list (an image-info file
    such as a test split's, whose captions are withheld). `unique_annotation_ids=False` lets several
    annotations share an id (a format whose ids name something else than the annotation itself).
    """
    document = require_object(json_document(path), path=path, line=None)
    images = [_image(raw, index, path) for index, raw in enumerate(_list(document, "images", path, required=True))]
    by_id: dict[int, CocoImage] = {}
    by_name: dict[str, CocoImage] = {}
    for image in images:
        if image.id in by_id:
            raise ImportFormatError(
                path, None, f"{image.where}.id", f"image id {image.id} also at {by_id[image.id].where}"
            )
        if image.file_name in by_name:
            raise ImportFormatError(
                path, None, f"{image.where}.file_name", f"{image.file_name!r} also at {by_name[image.file_name].where}"
            )
        by_id[image.id] = image
        by_name[image.file_name] = image
    raw_annotations = _list(document, "annotations", path, required=annotations_required)
    annotations = [_annotation(raw, index, path) for index, raw in enumerate(raw_annotations)]
    seen: dict[int, CocoAnnotation] = {}
    for annotation in annotations:
        if annotation.image_id not in by_id:
            raise ImportFormatError(
                path, None, f"{annotation.where}.image_id", f"image id {annotation.image_id} is not in images"
            )
        if unique_annotation_ids and annotation.id in seen:
            raise ImportFormatError(
                path,
                None,
                f"{annotation.where}.id",
                f"annotation id {annotation.id} also at {seen[annotation.id].where}",
            )
        seen.setdefault(annotation.id, annotation)
    return CocoDocument(path=path, images=images, annotations=annotations, document=document)


def _list(document: dict, key: str, path: Path, *, required: bool) -> list[Any]:
    if key not in document:
        if required:
            raise ImportFormatError(path, None, key, "missing (not a COCO-style annotation file)")
        return []
    value = document[key]
    if not isinstance(value, list):
        raise ImportFormatError(path, None, key, f"expected a list, found {type(value).__name__}")
    return value


def _image(raw: Any, index: int, path: Path) -> CocoImage:
    where = f"images[{index}]"
    entry = require_object(raw, path=path, line=None, field=where)
    for key in ("id", "file_name"):
        if key not in entry:
            raise ImportFormatError(path, None, f"{where}.{key}", "missing")
    image_id = parse_int(entry["id"], path=path, line=None, field=f"{where}.id", low=0)
    file_name = parse_text(entry["file_name"], path=path, line=None, field=f"{where}.file_name")
    if file_name != file_name.strip() or "/" in file_name or "\\" in file_name:
        raise ImportFormatError(path, None, f"{where}.file_name", f"expected a bare file name, found {file_name!r}")
    return CocoImage(id=image_id, file_name=file_name, where=where, fields=entry)


def _annotation(raw: Any, index: int, path: Path) -> CocoAnnotation:
    where = f"annotations[{index}]"
    entry = require_object(raw, path=path, line=None, field=where)
    for key in ("id", "image_id", "caption"):
        if key not in entry:
            raise ImportFormatError(path, None, f"{where}.{key}", "missing")
    return CocoAnnotation(
        id=parse_int(entry["id"], path=path, line=None, field=f"{where}.id", low=0),
        image_id=parse_int(entry["image_id"], path=path, line=None, field=f"{where}.image_id", low=0),
        caption=parse_text(entry["caption"], path=path, line=None, field=f"{where}.caption"),
        where=where,
        fields=entry,
    )


def _by_id(annotation: CocoAnnotation) -> int:
    return annotation.id
