"""`manage.py submit DATASET FILE --user NAME --name METHOD`: upload a captioner's results file."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import Dataset
from submissions.formats import SubmissionFileError
from submissions.services import MethodInfo, QuotaExceeded, SubmissionRefused, submission_create


class Command(BaseCommand):
    help = "Submit a results file (COCO captioning results JSON, JSONL or CSV with image_id and caption)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset")
        parser.add_argument("file", type=Path)
        parser.add_argument("--user", required=True)
        parser.add_argument("--name", required=True, help="method name")
        parser.add_argument("--description", default="")
        parser.add_argument("--paper-url", default="")
        parser.add_argument("--code-url", default="")
        parser.add_argument("--metric", action="append", dest="metrics", help="slug (repeat); default every metric")
        parser.add_argument("--public", action="store_true")

    def handle(self, *args, **options) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        owner = get_user_model().objects.filter(username=options["user"]).first()
        if owner is None:
            raise CommandError(f"no user {options['user']!r}")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        method = MethodInfo(options["name"], options["description"], options["paper_url"], options["code_url"])
        try:
            submission = submission_create(
                owner=owner,
                dataset=dataset,
                file_name=path.name,
                content=path.read_bytes(),
                method=method,
                metrics=options["metrics"],
                is_public=options["public"],
            )
        except (SubmissionFileError, SubmissionRefused, QuotaExceeded) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"submission {submission.pk}: {submission.caption_count:,} captions, {submission.status}")
