"""`manage.py datasets import|export|list|references|media|candidates|fetch|catalogue ...`: moving benchmark datasets in and out."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.fetching.errors import FetchError
from catalog.importers import canonical
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import IMPORTERS, read_bundle
from catalog.management import fetch_cli
from catalog.models import Dataset
from catalog.services.candidates import FORMATS, candidate_lines, is_meta_evaluation
from catalog.services.exports import dataset_bundle
from catalog.services.imports import dataset_import
from catalog.services.media import media_attach, media_manifest_apply
from catalog.services.media_urls import media_fetch_all, media_to_fetch
from catalog.services.references import HidingRefused, dataset_references_set


class Command(BaseCommand):
    help = "Import, export and list benchmark datasets; attach manifests and media files."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        importing = actions.add_parser("import", help="import a dataset from its source files")
        importing.add_argument("format", choices=sorted(IMPORTERS))
        importing.add_argument("path", type=Path, help="the source file, or the folder holding it")
        importing.add_argument("--slug", help="store under this slug instead of the format's default")
        importing.add_argument("--title", help="the dataset's title (default: the format's)")
        importing.add_argument("--manifest", type=Path, help="an `md5  path` checksum list of the media")
        importing.add_argument("--split", help="the split to import, for sources holding several (test, val, ...)")
        importing.add_argument(
            "--references-hidden",
            action="store_true",
            help="a hidden test set: references and judgments shown to staff only (never unhides on re-import)",
        )
        exporting = actions.add_parser("export", help="write a dataset in the canonical JSONL format")
        exporting.add_argument("slug")
        exporting.add_argument("--format", choices=["jsonl"], default="jsonl")
        exporting.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
        actions.add_parser("list", help="list the stored datasets")
        fetch_cli.add_parsers(actions)
        references = actions.add_parser(
            "references", help="hide a dataset's references (a hidden test set: staff only) or make them public"
        )
        references.add_argument("slug")
        references.add_argument("state", choices=["hidden", "public"])
        candidates = actions.add_parser(
            "candidates", help="a meta-evaluation dataset's judged captions, for scoring with your own metric"
        )
        candidates.add_argument("slug")
        candidates.add_argument("--format", choices=FORMATS, help="default: from the file's extension, else jsonl")
        candidates.add_argument("--output", "-o", type=Path, help="file to write (default: stdout)")
        media = actions.add_parser("media", help="media files of a dataset")
        media_actions = media.add_subparsers(dest="media_action", required=True)
        manifest = media_actions.add_parser("manifest", help="record expected md5s from a manifest")
        manifest.add_argument("slug")
        manifest.add_argument("manifest", type=Path)
        fetching = media_actions.add_parser(
            "fetch", help="download every medium that has an address and no file (resumes; checksums pinned)"
        )
        fetching.add_argument("slug")
        attach = media_actions.add_parser("attach", help="attach files whose checksum matches")
        attach.add_argument("slug")
        attach.add_argument("directory", type=Path)

    def handle(self, *args, **options) -> None:
        action = options["action"] if options["action"] != "media" else f"media_{options['media_action']}"
        try:
            getattr(self, f"do_{action}")(options)
        except ImportFormatError as error:
            raise CommandError(f"nothing was imported: {error}") from None
        except (FetchError, HidingRefused) as error:
            raise CommandError(str(error)) from None

    def dataset(self, slug: str) -> Dataset:
        try:
            return Dataset.objects.get(slug=slug)
        except Dataset.DoesNotExist:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no dataset {slug!r} (stored: {known})") from None

    def do_import(self, options: dict) -> None:
        started = time.perf_counter()
        bundle = read_bundle(options["format"], options["path"], manifest=options["manifest"], split=options["split"])
        parsed = time.perf_counter() - started
        outcome = dataset_import(
            bundle=bundle,
            source_path=str(options["path"]),
            slug=options["slug"],
            title=options["title"],
            references_hidden=options["references_hidden"],
        )
        total = time.perf_counter() - started
        counts = ", ".join(f"{count:,} {name}" for name, count in outcome.counts.items() if count)
        verb = "imported" if outcome.changed else "unchanged (same content already stored), nothing written:"
        self.stdout.write(f"{outcome.dataset.slug}: {verb} {counts}")
        if outcome.dataset.references_hidden:
            self.stdout.write("  references hidden: references and judgments are shown to staff only")
        for name, value in outcome.report.items():
            self.stdout.write(f"  {name.replace('_', ' ')}: {value:,}")
        for name, value in outcome.removed.items():
            self.stdout.write(f"  removed {value:,} {name} rows no longer in the source")
        for warning in outcome.warnings[:20]:
            self.stdout.write(self.style.WARNING(f"  warning: {warning}"))
        if len(outcome.warnings) > 20:
            self.stdout.write(self.style.WARNING(f"  ... and {len(outcome.warnings) - 20} more warnings"))
        self.stdout.write(f"  time: {total:.2f} s (parse {parsed:.2f} s, store {outcome.seconds:.2f} s)")

    def do_export(self, options: dict) -> None:
        bundle = dataset_bundle(dataset=self.dataset(options["slug"]))
        if options["output"]:
            with options["output"].open("w", encoding="utf-8") as stream:
                count = canonical.write(bundle, stream)
            self.stderr.write(f"{options['slug']}: wrote {count:,} lines to {options['output']}")
        else:
            canonical.write(bundle, sys.stdout)

    def do_candidates(self, options: dict) -> None:
        dataset = self.dataset(options["slug"])
        if not is_meta_evaluation(dataset):
            raise CommandError(
                f"{dataset.slug!r} is not a meta-evaluation dataset (it has no human judgments): "
                "it has no candidates to score"
            )
        output = options["output"]
        format = options["format"] or ("csv" if output and output.suffix.lower() == ".csv" else "jsonl")
        if output is None:
            for line in candidate_lines(dataset, format):
                self.stdout.write(line, ending="")
            return
        count = 0
        with output.open("w", encoding="utf-8", newline="") as stream:
            for line in candidate_lines(dataset, format):
                stream.write(line)
                count += 1
        rows = count - 1 if format == "csv" else count
        self.stderr.write(f"{dataset.slug}: wrote {rows:,} candidates ({format}) to {output}")

    def do_references(self, options: dict) -> None:
        dataset = self.dataset(options["slug"])
        hidden = options["state"] == "hidden"
        changed = dataset_references_set(dataset=dataset, hidden=hidden)
        state = "hidden (shown to staff only)" if hidden else "public"
        self.stdout.write(f"{dataset.slug}: references {state}{'' if changed else ' already'}")

    def do_fetch(self, options: dict) -> None:
        fetch_cli.run_fetch(self, options)

    def do_catalogue(self, options: dict) -> None:
        fetch_cli.run_catalogue(self, options)

    def do_list(self, options: dict) -> None:
        for dataset in Dataset.objects.all():
            self.stdout.write(
                f"{dataset.slug:24} {dataset.kind:9} {dataset.modality:6} "
                f"{dataset.items.count():>6,} items  {dataset.title}"
            )

    def do_media_manifest(self, options: dict) -> None:
        outcome = media_manifest_apply(dataset=self.dataset(options["slug"]), manifest=options["manifest"])
        self.stdout.write(
            f"{options['slug']}: {outcome.matched:,} media matched the manifest "
            f"({outcome.changed:,} updated); {outcome.media_without_checksum:,} media "
            f"without a checksum; {outcome.entries_not_in_dataset:,} manifest entries "
            "not in this dataset"
        )

    def do_media_fetch(self, options: dict) -> None:
        dataset = self.dataset(options["slug"])
        pending = len(media_to_fetch(dataset))
        self.stdout.write(f"{dataset.slug}: {pending:,} media to download")
        outcome = media_fetch_all(dataset)
        self.stdout.write(
            f"{dataset.slug}: stored {len(outcome.stored):,} files ({outcome.already_stored:,} were already stored)"
        )
        for line in outcome.failed[:20]:
            self.stdout.write(self.style.WARNING(f"  not stored: {line}"))
        if outcome.failed:
            raise CommandError(
                f"{len(outcome.failed):,} of {pending:,} media could not be downloaded; run it again to resume"
            )

    def do_media_attach(self, options: dict) -> None:
        if not options["directory"].is_dir():
            raise CommandError(f"{options['directory']}: not a directory")
        outcome = media_attach(dataset=self.dataset(options["slug"]), directory=options["directory"])
        self.stdout.write(
            f"{options['slug']}: attached {len(outcome.attached):,} files "
            f"({len(outcome.already_attached):,} were already attached)"
        )
        for line in outcome.checksum_mismatch:
            self.stdout.write(self.style.WARNING(f"  checksum mismatch, not attached: {line}"))
        if outcome.not_in_dataset:
            self.stdout.write(
                f"  {len(outcome.not_in_dataset):,} files are not media of this dataset "
                f"(first: {outcome.not_in_dataset[0]})"
            )
        self.stdout.write(f"  {outcome.still_missing:,} media still have no file")
