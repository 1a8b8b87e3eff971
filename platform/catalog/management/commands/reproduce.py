"""`manage.py reproduce DATASET PATH`: the published Kendall table for a dataset, recomputed from its
source files (no database), with 95% image-level bootstrap intervals beside the papers' numbers."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.importers.errors import ImportFormatError
from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from catalog.management.pascal import pascal_accuracy
from evaluation.metaeval.protocols import protocol, rating_cells
from evaluation.metaeval.published import KENDALL, TOLERANCE
from evaluation.metrics import MetricUnavailable, UnknownMetric, get

DATASETS = ("flickr8k-expert", "flickr8k-cf", "pascal50s")


class Command(BaseCommand):
    help = "Recompute the published Kendall tau-b/tau-c of reference-based metrics, with 95% intervals."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", choices=DATASETS)
        parser.add_argument("path", help="the folder with the dataset's source files")
        parser.add_argument("--replicates", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=12345)
        parser.add_argument("--draws", type=int, default=5, help="Pascal-50S: random 5-reference draws")

    def handle(self, *args, **options) -> None:
        try:
            bundle = read_bundle(options["dataset"], Path(options["path"]))
        except ImportFormatError as error:
            raise CommandError(str(error)) from None
        if options["dataset"] == "pascal50s":
            pascal_accuracy(bundle, draws=options["draws"], seed=options["seed"], stdout=self.stdout)
            return
        table = judgment_rows(bundle)
        rows, human, images = table.rows, table.human, table.items
        self.stdout.write(
            f"{options['dataset']}: {len(rows):,} rows over {len(bundle.items):,} images; "
            f"95% intervals from {options['replicates']} image-level bootstrap replicates"
        )
        self.stdout.write(f"{'metric':10} {'tau-b':>22} {'paper':>6}   {'tau-c':>22} {'paper':>6}  match")
        mismatches = 0
        for slug in sorted({slug for dataset, slug in KENDALL if dataset == options["dataset"]}):
            mismatches += self._metric_line(slug, rows, human, images, options)
        if mismatches:
            raise CommandError(f"{mismatches} value(s) differ from the papers by more than {TOLERANCE}")

    def _metric_line(self, slug: str, rows: list, human: np.ndarray, images: list, options: dict) -> int:
        published = KENDALL[(options["dataset"], slug)]
        try:
            started = time.perf_counter()
            scores = np.array(get(slug).score(rows).scores)
        except UnknownMetric:
            self.stdout.write(f"{slug:10} not implemented yet")
            return 0
        except MetricUnavailable as error:
            self.stdout.write(f"{slug:10} unavailable: {error}")
            return 0
        paper = replace(protocol(options["dataset"], "paper"), replicates=options["replicates"], seed=options["seed"])
        intervals = rating_cells(paper, human.tolist(), scores.tolist(), images)  # its Sequence[float]
        cells, mismatches = [], 0
        for name in ("tau_b", "tau_c"):
            interval = intervals[name]
            ours = round(100 * interval.value, 1)
            mismatches += abs(ours - published[name]) > TOLERANCE + 1e-9
            cells.append(f"{ours:5.1f} [{100 * interval.low:5.1f}, {100 * interval.high:5.1f}] {published[name]:6.1f}")
        verdict = "yes" if not mismatches else "NO"
        self.stdout.write(
            f"{slug:10} {cells[0]:>29}   {cells[1]:>29}  {verdict}  ({time.perf_counter() - started:.1f} s)"
        )
        return mismatches
