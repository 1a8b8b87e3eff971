"""Where a dataset's publisher serves each image (docs/datasets.md, media by URL). COCO serves
every 2014/2015 image at images.cocodataset.org/<split><year>/<file name>; a COCO-style file may also
give `coco_url` per image (COCO's own files do, nocaps' point at its Open Images copies)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import urlsplit

COCO_HOST = "http://images.cocodataset.org"
_COCO_NAME = re.compile(r"COCO_(train|val|test)(2014|2015)_\d{12}\.jpg")


def coco_image_url(file_name: str) -> str:
    """The image's address on COCO's host, or "" when the name is not a COCO 2014/2015 file name
    (2017 names are bare ids, which do not say their split)."""
    match = _COCO_NAME.fullmatch(file_name)
    return f"{COCO_HOST}/{match[1]}{match[2]}/{file_name}" if match else ""


def image_url(file_name: str, fields: Mapping[str, object] | None = None) -> str:
    """A COCO-style image entry's own `coco_url` when it is an http(s) address, else COCO's address
    for its file name, else ""."""
    given = (fields or {}).get("coco_url")
    if (
        isinstance(given, str)
        and len(given) <= 500
        and urlsplit(given).scheme in {"http", "https"}
        and urlsplit(given).hostname
    ):
        return given
    return coco_image_url(file_name)
