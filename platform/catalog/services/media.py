"""Media files: checksum manifests and attaching files into the content-addressed store."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from catalog.importers.sources import md5_manifest
from catalog.models import Dataset, Media
from plumbing import storage

CHUNK = 1 << 20


@dataclass
class ManifestOutcome:
    matched: int
    changed: int
    media_without_checksum: int
    entries_not_in_dataset: int


@dataclass
class AttachOutcome:
    attached: list[str] = field(default_factory=list)
    already_attached: list[str] = field(default_factory=list)
    checksum_mismatch: list[str] = field(default_factory=list)
    not_in_dataset: list[str] = field(default_factory=list)
    still_missing: int = 0


@transaction.atomic
def media_manifest_apply(*, dataset: Dataset, manifest: Path) -> ManifestOutcome:
    """Record each declared file's expected md5 from an `md5  path` manifest (matched by file name)."""
    entries = md5_manifest(manifest)
    rows = list(Media.objects.select_for_update().filter(dataset=dataset))
    changed = []
    for media in rows:
        if media.name in entries and (media.expected_md5, media.manifest_path) != entries[media.name]:
            media.expected_md5, media.manifest_path = entries[media.name]
            changed.append(media)
    Media.objects.bulk_update(changed, ["expected_md5", "manifest_path"], batch_size=5000)
    if changed:
        # The stored content no longer equals what was imported: the next import must write.
        Dataset.objects.filter(pk=dataset.pk).update(content_sha256="")
    matched = sum(1 for media in rows if media.name in entries)
    return ManifestOutcome(
        matched=matched,
        changed=len(changed),
        media_without_checksum=len(rows) - matched,
        entries_not_in_dataset=len(entries) - matched,
    )


def media_attach(*, dataset: Dataset, directory: Path) -> AttachOutcome:
    """Link every file under `directory` whose name is a declared medium of the dataset and whose
    md5 equals the manifest's (when the manifest gives one) into the content-addressed store."""
    declared = {media.name: media for media in Media.objects.filter(dataset=dataset)}
    outcome = AttachOutcome()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        media = declared.get(path.name)
        if media is None:
            outcome.not_in_dataset.append(str(path))
            continue
        md5, sha256, size = _checksums(path)
        if media.expected_md5 and media.expected_md5 != md5:
            outcome.checksum_mismatch.append(f"{path} (md5 {md5}, manifest says {media.expected_md5})")
            continue
        if media.sha256 == sha256 and media.stored_path:
            outcome.already_attached.append(media.name)
            continue
        stored = store_file(path, sha256)
        width, height = image_size(path) if media.kind == Media.Kind.IMAGE else (None, None)
        Media.objects.filter(pk=media.pk).update(
            sha256=sha256, size_bytes=size, stored_path=stored, attached_at=timezone.now(), width=width, height=height
        )
        outcome.attached.append(media.name)
    outcome.still_missing = Media.objects.filter(dataset=dataset, stored_path="").count()
    return outcome


def _checksums(path: Path) -> tuple[str, str, int]:
    md5, sha256, size = hashlib.md5(), hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            md5.update(chunk)
            sha256.update(chunk)
            size += len(chunk)
    return md5.hexdigest(), sha256.hexdigest(), size


def store_file(path: Path, sha256: str) -> str:
    """Store the file as <sha[:2]>/<sha><suffix> (plumbing/storage.py: a hard link or a copy in a
    local folder, an upload to an object store); a crash never leaves a partial file under that name."""
    return storage.put_path(f"{sha256[:2]}/{sha256}{path.suffix.lower()}", path)


def image_size(path: Path) -> tuple[int | None, int | None]:
    """(width, height) in pixels from the file's header, (None, None) when it is no image Pillow reads."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            return image.size
    except (UnidentifiedImageError, OSError, ImportError):
        # ImportError: ultralytics, once imported, replaces Image.open with one that tries to install
        # a HEIF plugin on a file Pillow does not know.
        return None, None
