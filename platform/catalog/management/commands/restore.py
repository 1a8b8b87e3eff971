"""`manage.py restore FILE`: a backup archive back into the database and file store this
environment names (DATABASE_URL, CAPBENCH_MEDIA_ROOT or the CAPBENCH_S3_* settings); docs/deploy.md,
"Backups". The work is in plumbing/backups/."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing.backups import BackupError, archive_check, archive_warnings, backup_restore


class Command(BaseCommand):
    help = "Restore a backup archive (checked whole first) into an empty database and file store."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("archive", type=Path, help="an archive written by `manage.py backup`")
        parser.add_argument(
            "--force", action="store_true", help="replace the database's data and add to a store that holds files"
        )
        parser.add_argument("--check", action="store_true", help="only check the archive against its manifest")

    def handle(self, *args, **options) -> None:
        path: Path = options["archive"]
        try:
            if options["check"]:
                manifest = archive_check(path).manifest
                counts = manifest["counts"]
                self.stdout.write(
                    f"{path}: intact; made {manifest['created_at']} by CapBench {manifest['capbench_version']}: "
                    f"{counts['rows']:,} rows in {counts['tables']} tables, {counts['files']:,} files"
                )
                for warning in archive_warnings(manifest):
                    self.stderr.write(f"warning: {warning}")
                return
            summary = backup_restore(path=path, force=options["force"], log=self.stdout.write)
        except BackupError as error:
            raise CommandError(str(error)) from None
        for note in summary.notes:
            self.stdout.write(f"note: {note}")
        self.stdout.write(
            f"restored {path}: {summary.rows:,} rows in {summary.tables} tables, {summary.files:,} files "
            f"in {summary.seconds:.1f} s"
        )
