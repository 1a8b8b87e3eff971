"""`manage.py sweep`: the periodic sweep once (what the beat's reap task runs): stuck jobs and
batches recovered, submissions settled, new metric versions re-scored, unsent plans sent."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from submissions.sweep import submissions_sweep


class Command(BaseCommand):
    help = "Run the periodic sweep once and print its tally."

    def handle(self, *args, **options) -> None:
        self.stdout.write(", ".join(f"{key} {value}" for key, value in submissions_sweep().items()))
