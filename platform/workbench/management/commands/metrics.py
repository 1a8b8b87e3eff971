"""`manage.py metrics train camscore --dataset SLUG [--split train]`: fit a metric's learned part on
the platform's human judgments. `manage.py metrics submit SLUG FILE --user NAME --name "My metric"
[--lower-is-better] [--reference-free] [--public] [--wait]`: upload a metric's scores for a dataset
(JSONL or CSV lines `{"caption_id", "score"}`; the ids are those of `manage.py datasets candidates`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from capbench_eval.metrics import MetricUnavailable
from catalog.models import Dataset
from scoring.models import CorrelationResult, SignificanceResult
from scoring.services.training import SPLITS, camscore_train
from submissions.services import QuotaExceeded
from workbench.models import MetricUpload
from workbench.services import MetricInfo, MetricRefused, ScoresFile, ScoresRefused, metric_submit

TRAINABLE = {"camscore": camscore_train}


class Command(BaseCommand):
    help = "Train a metric's learned part (CAMScore's fusion); submit a metric's scores for a dataset."

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
        submit = actions.add_parser("submit", help="upload a metric's scores for a dataset's candidates")
        submit.add_argument("dataset", help="the dataset's slug")
        submit.add_argument("file", type=Path, help='JSONL or CSV lines {"caption_id", "score"}')
        submit.add_argument("--user", required=True, help="the owner's user name")
        submit.add_argument("--name", required=True, help="the metric's name (the same name again: a new version)")
        submit.add_argument("--description", default="")
        submit.add_argument("--paper-url", default="")
        submit.add_argument("--code-url", default="")
        submit.add_argument("--lower-is-better", action="store_true")
        submit.add_argument("--reference-free", action="store_true")
        submit.add_argument("--public", action="store_true", help="show it on the public boards (default: private)")
        submit.add_argument("--trained-on", action="store_true", help="the metric may have been fitted on this dataset")
        submit.add_argument("--wait", action="store_true", help="return once the correlations exist, and print them")
        submit.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (default 600)")

    def handle(self, *args, **options) -> None:
        if options["action"] == "submit":
            self._submit(options)
            return
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

    def _submit(self, options) -> None:
        dataset = Dataset.objects.filter(slug=options["dataset"]).first()
        if dataset is None:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
            raise CommandError(f"no dataset {options['dataset']!r} (stored: {known})")
        owner = get_user_model().objects.filter(username=options["user"]).first()
        if owner is None:
            raise CommandError(f"no user {options['user']!r}")
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        info = MetricInfo(
            options["name"],
            options["description"],
            options["paper_url"],
            options["code_url"],
            higher_is_better=not options["lower_is_better"],
            reference_free=options["reference_free"],
        )
        try:
            upload = metric_submit(
                owner=owner,
                info=info,
                files=[ScoresFile(dataset, path.name, path.read_bytes())],
                is_public=options["public"],
                trained_on=[dataset] if options["trained_on"] else None,
            )
        except (ScoresRefused, MetricRefused, QuotaExceeded) as error:
            raise CommandError(f"nothing was stored: {error}") from None
        version = upload.metric_version
        uploaded = upload.files.get()
        self.stdout.write(
            f"metric {version.metric.slug} version {version.version}: {uploaded.scored:,} of "
            f"{uploaded.candidates:,} candidates scored on {dataset.slug}"
        )
        if options["wait"]:
            self._wait(upload, options["timeout"])

    def _wait(self, upload: MetricUpload, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while upload.status == MetricUpload.Status.QUEUED:
            if time.monotonic() > deadline:
                raise CommandError(
                    f"the correlations were not computed within {timeout:.0f} s: is a worker running? "
                    "(`make run` starts one); they follow when one runs"
                )
            time.sleep(0.5)
            upload.refresh_from_db()
        if upload.status == MetricUpload.Status.FAILED:
            raise CommandError("the scores are stored but their correlations could not be computed")
        slug = upload.metric_version.metric.slug
        clusters: dict[tuple, dict[str, int]] = {}
        # A public metric's clusters are the public rows; a private one's its own rows.
        public, own = (
            SignificanceResult.objects.filter(subject__isnull=True),
            SignificanceResult.objects.filter(subject__slug=slug),
        )
        for r in [*public, *own]:
            ranks = dict(zip(r.metrics, r.ranks, strict=True))
            if slug in ranks:
                clusters[(r.dataset_id, r.protocol, r.dimension, r.statistic)] = ranks
        results = CorrelationResult.objects.filter(metric_version=upload.metric_version).order_by(
            "dataset__slug", "protocol", "level", "dimension", "statistic"
        )
        for result in results.select_related("dataset"):
            rank = clusters.get((result.dataset_id, result.protocol, result.dimension, result.statistic), {}).get(slug)
            self.stdout.write(
                " ".join(
                    [
                        slug,
                        result.dataset.slug,
                        result.protocol,
                        result.level,
                        result.dimension,
                        result.statistic,
                        _points(result.value),
                        f"[{_points(result.low)}, {_points(result.high)}]",
                        f"n={result.n}",
                        *([f"cluster={rank}"] if rank is not None and result.level == "caption" else []),
                    ]
                )
            )


def _points(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.2f}"
