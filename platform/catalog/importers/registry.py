"""The importer for each source format name, and manifest attachment.

An importer is a module with `FORMAT` (its name on the command line), `DEFAULT_MANIFEST` (a checksum
file usually found beside the source, or None) and `parse(path) -> DatasetBundle`. A format whose
source holds several splits also has `SPLITS` (the names it knows) and `DEFAULT_SPLIT`, and its
`parse(path, split=...)` imports one split as one dataset."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import ModuleType

from catalog.importers import (
    canonical,
    coco_captions,
    composite,
    flickr8k_cf,
    flickr8k_expert,
    foil,
    karpathy,
    msrvtt,
    msvd,
    msvd_eval,
    nebula,
    nocaps,
    pascal50s,
    polaris,
    thumb,
    vatex_eval,
)
from catalog.importers.bundle import DatasetBundle
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import md5_manifest

IMPORTERS: dict[str, ModuleType] = {
    module.FORMAT: module
    for module in (
        # meta-evaluation sets (human judgments of captions)
        *(flickr8k_expert, flickr8k_cf, pascal50s, msvd_eval, thumb, polaris, nebula, foil, composite, vatex_eval),
        # captioner benchmarks (references only)
        *(coco_captions, karpathy, nocaps, msrvtt, msvd),
        canonical,
    )
}


def read_bundle(
    source_format: str, path: Path, *, manifest: Path | None = None, split: str | None = None
) -> DatasetBundle:
    """Parse and validate a whole source (one split of it, for formats with splits). With no
    manifest given, a format's usual checksum file beside the source is used when present."""
    if source_format not in IMPORTERS:
        raise ImportFormatError(
            path, None, "format", f"unknown format {source_format!r} (known: {', '.join(sorted(IMPORTERS))})"
        )
    if not path.exists():
        raise ImportFormatError(path, None, None, "file or directory not found")
    importer = IMPORTERS[source_format]
    splits = getattr(importer, "SPLITS", None)
    if splits is None and split is not None:
        raise ImportFormatError(path, None, "split", f"the {source_format} format has no splits")
    if splits is not None:
        chosen = importer.DEFAULT_SPLIT if split is None else split
        if chosen not in splits:
            raise ImportFormatError(
                path, None, "split", f"unknown split {chosen!r} for {source_format} (known: {', '.join(splits)})"
            )
        bundle = importer.parse(path, split=chosen)
    else:
        bundle = importer.parse(path)
    if manifest is None and importer.DEFAULT_MANIFEST:
        beside = (path if path.is_dir() else path.parent) / importer.DEFAULT_MANIFEST
        manifest = beside if beside.is_file() else None
    if manifest is not None:
        apply_manifest(bundle, manifest)
    return bundle


def read_upload(file_name: str, content: bytes) -> DatasetBundle:
    """A canonical file sent over the API, read in a folder of its own (gone when read); an
    ImportFormatError names the file as it was sent, never that folder."""
    with tempfile.TemporaryDirectory(prefix="capbench-upload-") as folder:
        path = Path(folder) / Path(file_name).name
        path.write_bytes(content)
        try:
            return read_bundle("canonical", path)
        except ImportFormatError as error:
            shown = error.message.replace(folder + "/", "")
            raise ImportFormatError(path.name, error.line, error.field, shown) from None


def apply_manifest(bundle: DatasetBundle, manifest: Path) -> None:
    """Set each declared media file's expected md5 from an `md5  path` manifest (matched by name)."""
    if not manifest.is_file():
        raise ImportFormatError(manifest, None, None, "manifest file not found")
    entries = md5_manifest(manifest)
    matched = 0
    for media in bundle.media:
        if media.name in entries:
            media.expected_md5, media.manifest_path = entries[media.name]
            matched += 1
    bundle.report["manifest_matched"] = matched
    bundle.report["media_without_checksum"] = len(bundle.media) - matched
    bundle.report["manifest_entries_not_in_dataset"] = len(entries) - matched
