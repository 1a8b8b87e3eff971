"""`manage.py files upload FOLDER`: copy an install's stored files into the configured store.

An install that started with files on local disk (MEDIA_ROOT) and now sets CAPBENCH_S3_BUCKET runs
this once, with the bucket's settings, from a machine that has the old folder: every dataset image,
uploaded results file and generated picture is put in the bucket under the name the database already
records. Run it again at any time: what is there already is left alone. The local folder is left
as it is: delete it once the bucket serves."""

from __future__ import annotations

from pathlib import Path

from django.core.files.storage import FileSystemStorage
from django.core.management.base import BaseCommand, CommandError, CommandParser

from plumbing import storage


class Command(BaseCommand):
    help = "Stored files: `upload FOLDER` puts a local store's files (an old MEDIA_ROOT) in the configured store."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        upload = actions.add_parser("upload", help="put every file of FOLDER in the configured store")
        upload.add_argument("folder", type=Path, help="the old local store (MEDIA_ROOT)")

    def handle(self, *args, **options) -> None:
        folder: Path = options["folder"].resolve()
        target = storage.store()
        if isinstance(target, FileSystemStorage) and Path(target.location).resolve() == folder:
            raise CommandError(
                f"{folder} is the configured store itself: set CAPBENCH_S3_BUCKET (docs/deploy.md) to upload to a bucket"
            )
        try:
            stored, there = storage.upload_folder(folder)
        except FileNotFoundError as error:
            raise CommandError(str(error)) from None
        bucket = getattr(target, "bucket_name", "")
        where = f"bucket {bucket}" if bucket else "the configured store"
        self.stdout.write(f"{stored} file(s) stored in {where}, {there} there already")
