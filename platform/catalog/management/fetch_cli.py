"""`manage.py datasets fetch NAME` and `datasets catalogue`: their options and output
(docs/datasets.md §7). The work is `catalog.services.fetch`'s."""

from __future__ import annotations

import json
import sys
from argparse import _SubParsersAction
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from catalog.fetching.builtin import builtin_entries
from catalog.fetching.entries import Entry, load_catalogue
from catalog.fetching.progress import human_size
from catalog.services.fetch import catalogue_status, entry_fetch


def add_parsers(actions: _SubParsersAction) -> None:
    fetching = actions.add_parser(
        "fetch", help="download a dataset of the catalogue, verify its checksums, and import it"
    )
    fetching.add_argument("name", help="a catalogue entry (see `datasets catalogue`)")
    fetching.add_argument("--with-media", action="store_true", help="also download and attach its images/videos")
    fetching.add_argument(
        "--accept-unverified",
        action="store_true",
        help="download files the catalogue has no sha256 for (the sha256 computed is printed)",
    )
    fetching.add_argument("--no-import", action="store_true", help="download and verify only")
    catalogue = actions.add_parser(
        "catalogue", help="the datasets `fetch` knows, and which are downloaded and imported"
    )
    catalogue.add_argument("--json", action="store_true", help="machine-readable output")
    for parser in (fetching, catalogue):
        parser.add_argument("--catalogue", type=Path, help="a JSON catalogue replacing the built-in one")
        parser.add_argument("--downloads-dir", type=Path, help="default: CAPBENCH_DOWNLOADS_DIR")


def run_fetch(command: BaseCommand, options: dict) -> None:
    entries = _entries(options)
    entry = next((entry for entry in entries if entry.name == options["name"]), None)
    if entry is None:
        raise CommandError(f"no catalogue entry {options['name']!r} (known: {', '.join(e.name for e in entries)})")
    if options["with_media"] and entry.media is not None:
        size = entry.media.size
        command.stdout.write(f"{entry.name}: media to download: {human_size(size) if size else 'size unknown'}")
    elif options["with_media"]:
        command.stdout.write(f"{entry.name}: the catalogue knows no media download for this dataset")
    outcome = entry_fetch(
        entry=entry,
        downloads_dir=_downloads_dir(options),
        accept_unverified=options["accept_unverified"],
        with_media=options["with_media"],
        run_import=not options["no_import"],
        progress=sys.stderr,
        say=command.stdout.write,
    )
    command.stdout.write(f"{entry.name}: files in {outcome.folder}")
    if outcome.imported is not None:
        imported = outcome.imported
        counts = ", ".join(f"{count:,} {name}" for name, count in imported.counts.items() if count)
        verb = "imported" if imported.changed else "unchanged (same content already stored):"
        command.stdout.write(f"{imported.dataset.slug}: {verb} {counts}")
        for warning in imported.warnings[:5]:
            command.stdout.write(command.style.WARNING(f"  warning: {warning}"))
    if outcome.media is not None:
        media = outcome.media
        command.stdout.write(
            f"{entry.import_step.slug}: attached {len(media.attached):,} media files "
            f"({len(media.already_attached):,} already attached, {len(media.checksum_mismatch):,} checksum "
            f"mismatches); {media.still_missing:,} media still have no file"
        )
    if entry.notes:
        command.stdout.write(f"  note: {entry.notes}")


def run_catalogue(command: BaseCommand, options: dict) -> None:
    rows = catalogue_status(_entries(options), _downloads_dir(options))
    if options["json"]:
        command.stdout.write(
            json.dumps([_row(status.entry, status.downloaded, status.imported) for status in rows], indent=2)
        )
        return
    command.stdout.write(f"{'name':26} {'kind':15} {'size':>11}  {'files':22} {'imported':9} licence")
    for status in rows:
        entry = status.entry
        files = "downloaded" if status.downloaded else "absent"
        if status.downloaded:
            files += ", verified" if entry.verified else ", unverified"
        elif not entry.verified:
            files += " (unverified)"
        size = human_size(entry.size) if entry.size is not None else "unknown"
        imported = "yes" if status.imported else "no"
        command.stdout.write(f"{entry.name:26} {entry.kind:15} {size:>11}  {files:22} {imported:9} {entry.licence}")


def _row(entry: Entry, downloaded: bool, imported: bool) -> dict:
    return {
        "name": entry.name,
        "title": entry.title,
        "kind": entry.kind,
        "size": entry.size,
        "licence": entry.licence,
        "homepage": entry.homepage,
        "format": entry.import_step.format,
        "slug": entry.import_step.slug,
        "verified": entry.verified,
        "downloaded": downloaded,
        "imported": imported,
        "media_size": entry.media.size if entry.media else None,
        "files": [{"name": f.name, "url": f.url, "size": f.size, "sha256": f.sha256} for f in entry.files],
    }


def _entries(options: dict) -> list[Entry]:
    return load_catalogue(options["catalogue"]) if options["catalogue"] else builtin_entries()


def _downloads_dir(options: dict) -> Path:
    return Path(options["downloads_dir"] or settings.CAPBENCH_DOWNLOADS_DIR)
