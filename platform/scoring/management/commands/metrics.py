"""`manage.py metrics train camscore --dataset SLUG [--split train]`: fit a metric's learned part on
the platform's human judgments."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.models import Dataset
from evaluation.metrics import MetricUnavailable
from scoring.services.training import SPLITS, camscore_train

TRAINABLE = {"camscore": camscore_train}


class Command(BaseCommand):
    help = "Train a metric's learned part (CAMScore's fusion) on a dataset's human judgments."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        train = actions.add_parser("train", help="train on one split, stop early on another")
        train.add_argument("metric", choices=sorted(TRAINABLE))
        train.add_argument("--dataset", required=True)
        train.add_argument("--split", default="train", choices=SPLITS)
        train.add_argument("--validation", default="validation", choices=SPLITS)
        train.add_argument("--lr", type=float, default=3e-5)
        train.add_argument("--max-epochs", type=int, default=2000)
        train.add_argument("--patience", type=int, default=100)
        train.add_argument("--seed", type=int, default=0)

    def handle(self, *args, **options) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset {options['dataset']!r}")
        try:
            outcome = TRAINABLE[options["metric"]](
                dataset=dataset,
                split=options["split"],
                validation=options["validation"],
                lr=options["lr"],
                max_epochs=options["max_epochs"],
                patience=options["patience"],
                seed=options["seed"],
                progress=self.stdout.write,
            )
        except (ValueError, MetricUnavailable) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(
            f"best validation τ-b {outcome.best_tau:.4f} at epoch {outcome.best_epoch} of "
            f"{outcome.epochs}; saved {outcome.path}"
        )
        self.stdout.write(json.dumps(outcome.record, indent=1))
