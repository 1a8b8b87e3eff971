"""Fetching one catalogue entry end to end: download and verify its files, unpack the members it
needs, derive what the importer reads, import, and (opt-in) download and attach its media.
docs/datasets.md §7."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from catalog.fetching.derive import derive
from catalog.fetching.download import Downloaded, download, present
from catalog.fetching.entries import Entry, SourceFile
from catalog.fetching.errors import FetchError
from catalog.fetching.extract import extract
from catalog.importers.registry import read_bundle
from catalog.models import Dataset
from catalog.services.imports import ImportOutcome, dataset_import
from catalog.services.media import AttachOutcome, media_attach

MEDIA_FOLDER = "media"


@dataclass
class FetchOutcome:
    entry: Entry
    folder: Path
    downloads: list[Downloaded] = field(default_factory=list)
    imported: ImportOutcome | None = None
    media: AttachOutcome | None = None


@dataclass(frozen=True)
class EntryStatus:
    entry: Entry
    downloaded: bool  # every file is in the downloads folder and was checked (stamped)
    imported: bool  # a dataset with the entry's slug exists


def entry_fetch(
    *,
    entry: Entry,
    downloads_dir: Path,
    accept_unverified: bool = False,
    with_media: bool = False,
    run_import: bool = True,
    progress: TextIO | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> FetchOutcome:
    """Everything `datasets fetch NAME` does. Nothing is imported unless every file arrived and
    matched its checksum; files without a catalogue checksum are refused up front unless
    `accept_unverified` (their computed sha256 is reported through `say`)."""
    media = entry.media.files if with_media and entry.media else ()
    unverified = [source for source in (*entry.files, *media) if not source.verified]
    if unverified and not accept_unverified:
        listed = "; ".join(f"{source.name} ({source.url})" for source in unverified)
        raise FetchError(
            f"{entry.name}: the catalogue has no sha256 for {listed}, so nothing could check what arrives. "
            "Pass --accept-unverified to download anyway (the sha256 computed is printed so the catalogue can be completed)"
        )
    outcome = FetchOutcome(entry=entry, folder=downloads_dir / entry.folder)
    for source in entry.files:
        outcome.downloads.append(_fetched(source, outcome.folder, outcome.folder, accept_unverified, progress, say))
    for step in entry.derive:
        derive(step, outcome.folder)
    if run_import:
        outcome.imported = _imported(entry, outcome.folder)
    media_folder = outcome.folder / MEDIA_FOLDER
    for source in media:
        outcome.downloads.append(_fetched(source, outcome.folder, media_folder, accept_unverified, progress, say))
    if media and outcome.imported is not None:
        outcome.media = media_attach(dataset=outcome.imported.dataset, directory=media_folder)
    return outcome


def catalogue_status(entries: list[Entry], downloads_dir: Path) -> list[EntryStatus]:
    slugs = set(Dataset.objects.filter(slug__in=[e.import_step.slug for e in entries]).values_list("slug", flat=True))
    return [
        EntryStatus(
            entry=entry,
            downloaded=all(present(source, downloads_dir / entry.folder) is not None for source in entry.files),
            imported=entry.import_step.slug in slugs,
        )
        for entry in entries
    ]


def _fetched(
    source: SourceFile,
    folder: Path,
    unpack_into: Path,
    accept_unverified: bool,
    progress: TextIO | None,
    say: Callable[[str], None],
) -> Downloaded:
    result = download(source, folder, accept_unverified=accept_unverified, progress=progress, say=say)
    if result.already_present:
        state = "verified" if result.verified else "not verified: the catalogue has no sha256"
        say(f"{source.name}: already downloaded ({state}), nothing downloaded")
    else:
        resumed = f", resumed after {result.resumed_from:,} bytes" if result.resumed_from else ""
        say(
            f"{source.name}: downloaded {result.received:,} bytes{resumed}; sha256 {'verified' if result.verified else 'computed'}"
        )
    if not result.verified:
        say(f"  {source.name}: size {result.size:,} bytes, sha256 {result.sha256} (not in the catalogue: add them)")
    if source.extract is not None:
        written = extract(result.path, unpack_into, source.extract)
        say(f"  unpacked {len(written):,} files from {source.name}")
    return result


def _imported(entry: Entry, folder: Path) -> ImportOutcome:
    step = entry.import_step
    matches = sorted(folder.glob(step.path))
    if len(matches) != 1:
        found = ", ".join(str(path) for path in matches[:5]) or "nothing"
        raise FetchError(
            f"{entry.name}: the import path {step.path!r} inside {folder} must name one file; found {found}"
        )
    bundle = read_bundle(step.format, matches[0], split=step.split)
    return dataset_import(
        bundle=bundle,
        source_path=str(matches[0]),
        slug=step.slug,
        title=entry.title,
        references_hidden=step.references_hidden,
    )
