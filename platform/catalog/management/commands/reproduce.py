"""`manage.py reproduce DATASET PATH`: a meta-evaluation dataset's paper protocol recomputed from
its source files (the files `datasets fetch` brings, or the format its importer reads; no database),
each cell with its 95% interval beside the published value where one is known: ours, theirs, the
difference, whether theirs lies inside our interval and whether ours matches it to the printed
value's rounding (evaluation/capbench_eval/metaeval/published.py; docs/datasets.md §3)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from capbench_eval.metaeval.protocols import PROTOCOLS
from capbench_eval.metaeval.published import NO_TABLE, SOURCES, published_of
from capbench_eval.metrics import MetricUnavailable, UnknownMetric, get
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle
from catalog.management.pascal import pascal_accuracy
from catalog.management.reproduction import HEADER, foil_cells, metric_slugs, rating_cells_of, timed

DATASETS = tuple(sorted({p.dataset for p in PROTOCOLS.values() if p.name == "paper"}))


class Command(BaseCommand):
    help = "Recompute a dataset's published meta-evaluation table, with 95% intervals."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dataset", choices=DATASETS)
        parser.add_argument("path", help="the folder with the dataset's source files")
        parser.add_argument("--replicates", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=12345)
        parser.add_argument("--draws", type=int, default=5, help="Pascal-50S: random 5-reference draws (K)")
        parser.add_argument("--metrics", default="", help="comma-separated slugs (default: the published table's)")
        parser.add_argument("--split", default=None, help="a dataset with versions: which (Nebula: test-corrected)")

    def handle(self, *args, **options) -> None:
        dataset = options["dataset"]
        try:
            bundle = read_bundle(dataset, Path(options["path"]), split=options["split"])
        except ImportFormatError as error:
            raise CommandError(str(error)) from None
        if dataset == "pascal50s":
            pascal_accuracy(bundle, draws=options["draws"], seed=options["seed"], stdout=self.stdout)
            return
        slugs = [s for s in options["metrics"].split(",") if s] or metric_slugs(dataset)
        self._sources(dataset, bundle)
        self.stdout.write(HEADER)
        mismatches = 0
        for slug in slugs:
            try:
                metric = get(slug)
                metric.require_available()
            except UnknownMetric:
                self.stdout.write(f"{slug:10} not implemented")
                continue
            except MetricUnavailable as error:
                self.stdout.write(f"{slug:10} unavailable: {error}")
                continue
            kwargs = {"replicates": options["replicates"], "seed": options["seed"]}
            if dataset == "foil":
                cells = foil_cells(bundle, metric, **kwargs)
            else:
                cells = rating_cells_of(dataset, bundle, metric, split=options["split"] or "", **kwargs)
            for cell, seconds in timed(cells):
                mismatches += cell.matches is False
                self.stdout.write(f"{cell.line()}  ({seconds:.1f} s)")
        if mismatches:
            raise CommandError(f"{mismatches} value(s) differ from the papers by more than their printed rounding")

    def _sources(self, dataset: str, bundle) -> None:
        rows = len(bundle.judgments) or len(bundle.pairs)
        self.stdout.write(f"{dataset}: {rows:,} judgment rows or pairs over {len(bundle.items):,} items")
        for key in dict.fromkeys(entry.source for entry in published_of(dataset)):
            source = SOURCES[key]
            self.stdout.write(f"published: {source.paper}, {source.table}; data: {source.data}")
        if dataset in NO_TABLE:
            self.stdout.write(f"published: none here ({NO_TABLE[dataset]}); ours only")
