"""`manage.py reproduce NAME PATH` for a rating dataset or FOIL: the paper protocol's cells
recomputed from the source files (no database), each beside its published value where one is known
(evaluation/capbench_eval/metaeval/published.py): ours with its 95% interval, theirs, the difference, whether
theirs lies inside our interval, and whether ours matches it to the printed value's rounding.

A corpus-dependent metric scores the rows in the protocol's corpus (docs/metaeval.md §7.7), the
same rule the platform's scoring follows."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import cast

import numpy as np

from capbench_eval.metaeval.bootstrap import Interval, cluster_bootstrap_draws
from capbench_eval.metaeval.pairwise import pairwise_accuracy
from capbench_eval.metaeval.protocols import CORPUS_DATASET, CORPUS_ROWS, Protocol, protocol, rating_cells
from capbench_eval.metaeval.published import Published, published_of
from capbench_eval.metaeval.system_level import MIN_SYSTEMS, JudgedRows, ScoredRows, system_level_cells
from capbench_eval.metaeval.system_value import Aggregation
from capbench_eval.metrics import CaptionRow, Metric
from capbench_eval.metrics.base import CORPUS
from catalog.importers.bundle import CaptionKey, DatasetBundle
from catalog.importers.judgment_rows import JudgmentRows, judgment_rows

DEFAULT_METRICS = ("bleu_4", "meteor", "rouge_l", "cider_d")  # where no table names the metrics


@dataclass(frozen=True)
class Cell:
    metric: str
    dimension: str
    statistic: str
    ours: Interval
    published: Published | None
    comparable: bool = True  # computed on the data version the published value was (else shown, not judged)

    @property
    def matches(self) -> bool | None:
        """Ours equals theirs to the printed rounding (None: nothing published)."""
        if self.published is None or not self.comparable:
            return None
        return abs(100 * self.ours.value - self.published.value) <= self.published.tolerance + 1e-9

    def line(self) -> str:
        ours = f"{100 * self.ours.value:7.2f} [{100 * self.ours.low:6.2f}, {100 * self.ours.high:6.2f}]"
        start = f"{self.metric:10} {self.dimension[:34]:34} {self.statistic:8} {ours}"
        if self.published is None:
            return f"{start}       –       –    –    –"
        theirs = self.published.value
        inside = "yes" if 100 * self.ours.low <= theirs <= 100 * self.ours.high else "no"
        verdict = "yes" if self.matches else "NO" if self.comparable else "n/a"
        other = "" if self.comparable else f"  (published on split {self.published.split})"
        return f"{start} {theirs:7.1f} {100 * self.ours.value - theirs:+7.2f} {inside:>4} {verdict:>4}{other}"


HEADER = f"{'metric':10} {'dimension':34} {'stat.':8} {'ours [95% interval]':>23} {'paper':>7} {'Δ':>7} {'in CI':>5} {'match':>5}"


def metric_slugs(dataset: str) -> list[str]:
    named = list(dict.fromkeys(entry.metric for entry in published_of(dataset)))
    return named or list(DEFAULT_METRICS)


def rating_cells_of(
    dataset: str, bundle: DatasetBundle, metric: Metric, *, replicates: int, seed: int, split: str = ""
) -> Iterator[Cell]:
    """Every (dimension, statistic) cell of the dataset's paper protocol, and its published ones."""
    published = [entry for entry in published_of(dataset) if entry.metric == metric.slug]
    paper = protocol(dataset, "paper")
    statistics = tuple(dict.fromkeys([*paper.statistics, *(entry.statistic for entry in published)]))
    chosen = replace(paper, statistics=statistics, replicates=replicates, seed=seed)
    kinds = {system.slug: system.kind for system in bundle.systems}
    for dimension in bundle.info.dimensions:
        table = judgment_rows(bundle, dimension)
        if not table.rows:
            continue
        scores = corpus_scores(metric, table, chosen)
        subsets = [(dimension, np.ones(len(table.rows), dtype=bool))]
        for kind in chosen.without:
            kept = np.array([kinds.get(caption.system) != kind for caption in table.captions])
            subsets.append((f"{dimension}, without {kind.capitalize()}", kept))
        for name, kept in subsets:
            intervals = rating_cells(
                chosen,
                table.human[kept].tolist(),
                scores.rows[kept].tolist(),
                [item for item, keep in zip(table.items, kept, strict=True) if keep],
                np.asarray(table.annotators)[kept].tolist() if chosen.per_annotator else None,
            )
            for statistic, interval in intervals.items():
                theirs = next((e for e in published if e.statistic == statistic and e.dimension in ("", name)), None)
                comparable = theirs is None or not theirs.split or theirs.split == split
                yield Cell(metric.slug, name, statistic, interval, theirs, comparable)
            for statistic, interval in system_cells(metric, table, scores, kept, kinds, chosen).items():
                yield Cell(metric.slug, f"{name} (systems)", statistic, interval, None)


@dataclass(frozen=True)
class CorpusScores:
    rows: np.ndarray  # each judgment row's score
    captions: dict[CaptionKey, tuple[float, object]]  # each caption's score and statistics, once


def corpus_scores(metric: Metric, table: JudgmentRows, chosen: Protocol) -> CorpusScores:
    """The metric's score of every judgment row, its captions scored in the protocol's corpus."""
    first: dict[CaptionKey, int] = {}
    for index, caption in enumerate(table.captions):
        first.setdefault(caption, index)
    if not metric.corpus_dependent or chosen.corpus.rule == CORPUS_ROWS:
        result = metric.score(table.rows)
        statistics = result.statistics or [None] * len(table.rows)
        captions = {caption: (result.scores[at], statistics[at]) for caption, at in first.items()}
    else:
        parts: dict[str, list[CaptionKey]] = {}
        for caption in first:
            parts.setdefault("" if chosen.corpus.rule == CORPUS_DATASET else caption.system, []).append(caption)
        captions = {}
        for keys in parts.values():
            result = metric.score([table.rows[first[c]] for c in keys])
            statistics = result.statistics or [None] * len(keys)
            captions.update({c: (result.scores[n], statistics[n]) for n, c in enumerate(keys)})
    return CorpusScores(np.array([captions[c][0] for c in table.captions], dtype=float), captions)


def system_cells(
    metric: Metric, table: JudgmentRows, scores: CorpusScores, kept: np.ndarray, kinds: dict[str, str], chosen: Protocol
) -> dict[str, Interval]:
    """System-level agreement as the platform computes it (docs/metaeval.md §7.1): each real
    system's mean rating against its number as the captioner board forms it from its captions
    (each once), over the kept rows; empty with fewer than MIN_SYSTEMS systems."""
    real = kept & np.array([kinds.get(c.system) in ("model", "human") for c in table.captions])
    if len({c.system for c, keep in zip(table.captions, real, strict=True) if keep}) < MIN_SYSTEMS:
        return {}
    judged = JudgedRows(
        table.human[real],
        np.array([c.system for c in table.captions])[real],
        np.array(table.items)[real],
    )
    captions = sorted({c for c, keep in zip(table.captions, real, strict=True) if keep}, key=str)
    values = np.array([scores.captions[c][0] for c in captions], dtype=float)
    statistics = [scores.captions[c][1] for c in captions] if metric.aggregation == CORPUS else None
    scored = ScoredRows(
        metric.caption_totals(values, statistics),
        np.array([c.system for c in captions]),
        np.array([c.item for c in captions]),
    )
    aggregation = cast(Aggregation, metric)  # (its aggregation a ClassVar: the same attribute)
    return system_level_cells(judged, scored, aggregation, replicates=chosen.replicates, seed=chosen.seed)


def foil_cells(bundle: DatasetBundle, metric: Metric, *, replicates: int, seed: int) -> Iterator[Cell]:
    """FOIL's accuracy (the original must score strictly higher) with 1 reference (the pair's
    stored draw: the image's first remaining COCO caption) and with 4 (the item's references)."""
    texts = {caption.key: caption.text for caption in bundle.captions}
    references = {item.external_id: tuple(item.references) for item in bundle.items}
    published = {e.dimension: e for e in published_of("foil") if e.metric == metric.slug}
    pairs = bundle.pairs
    items = [pair.item for pair in pairs]
    for setting in ("1-ref", "4-ref"):
        rows = []
        for index, pair in enumerate(pairs):
            refs = tuple(pair.references or ()) if setting == "1-ref" else references[pair.item]
            rows.append(CaptionRow(f"{index}a", texts[pair.caption_a], refs))
            rows.append(CaptionRow(f"{index}b", texts[pair.caption_b], refs))
        scores = np.array(metric.score(rows).scores, dtype=float)  # one corpus of every pair's two captions
        a, b, winners = scores[0::2], scores[1::2], [pair.winner for pair in pairs]

        def accuracy(weights: np.ndarray | None, a=a, b=b, winners=winners) -> list[float]:
            return [pairwise_accuracy(a, b, winners, weights).strict]

        [interval], _ = cluster_bootstrap_draws(accuracy, items, replicates=replicates, seed=seed)
        yield Cell(metric.slug, setting, "accuracy", interval, published.get(setting))


def timed(cells: Iterator[Cell]) -> Iterator[tuple[Cell, float]]:
    """Each cell with the seconds since the previous one (the metric's time, mostly)."""
    started = time.perf_counter()
    for cell in cells:
        yield cell, time.perf_counter() - started
        started = time.perf_counter()
