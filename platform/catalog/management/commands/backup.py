"""`manage.py backup --output FILE`: one archive of the database and the file store (docs/deploy.md,
"Backups"); the work is in plumbing/backups/."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing.backups import BackupError, archive_warnings, backup_create


class Command(BaseCommand):
    help = "Write one consistent archive of the database and the file store, with a checksum manifest."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--output", type=Path, required=True, help="the archive to write (a new file)")

    def handle(self, *args, **options) -> None:
        try:
            summary = backup_create(output=options["output"], log=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"{options['output']}: {summary.archive_bytes:,} bytes, {summary.rows:,} rows from {summary.tables} "
            f"tables and {summary.files:,} files ({summary.file_bytes:,} bytes) in {summary.seconds:.1f} s"
        )
        for warning in archive_warnings({"missing": summary.missing}):
            self.stderr.write(f"warning: {warning}")
