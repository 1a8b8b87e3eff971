"""Versioned meta-evaluation protocols (metaeval.md §7): how a dataset's human judgments and a
metric's per-row scores become leaderboard cells.

Each dataset has a "paper" protocol, which reproduces the published tables (its headline
statistic first), and a "canonical" one that applies the same rules to every metric and dataset.
A protocol's version changes whenever its numbers would: THumB's and the generic canonical
protocol's are at 2 since their system level compares people with each system's number as the
captioner board forms it (capbench_eval.metaeval.system_level; docs/metaeval.md §7.1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from capbench_eval.metaeval.bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    Interval,
    cluster_bootstrap_blocks,
    cluster_index,
)
from capbench_eval.metaeval.correlation import pearson_values, spearman_values
from capbench_eval.metaeval.kendall import pair_count_block, tau_b_values, tau_c_values
from capbench_eval.metaeval.ranked import RankedRows

RATING_STATISTICS = ("tau_b", "tau_c", "pearson", "spearman")

# The version of the protocol every rating dataset without a known one gets (scoring's
# dataset_protocols): 2 since its system level reads the board's system numbers.
GENERIC_VERSION = "2"

# Which captions form a corpus-dependent metric's corpus (CIDEr-D's document frequencies) when a
# dataset's own candidates are scored (docs/metaeval.md §7.7). A submission is always scored as
# SYSTEM: its captions alone, as COCO's toolkit scores one results file.
CORPUS_ROWS = "rows"  # every row of the protocol is a document: a caption once per judgment of a dimension
CORPUS_DATASET = "dataset"  # every candidate caption of the dataset once
CORPUS_SYSTEM = "system"  # each system's captions apart, each once
CORPORA = (CORPUS_ROWS, CORPUS_DATASET, CORPUS_SYSTEM)


@dataclass(frozen=True)
class Corpus:
    """A protocol's corpus rule (CORPORA) and where it comes from."""

    rule: str
    source: str

    def __post_init__(self) -> None:
        if self.rule not in CORPORA:
            raise ValueError(f"corpus rule {self.rule!r} is not one of {CORPORA}")


PER_SYSTEM = Corpus(CORPUS_SYSTEM, "pycocoevalcap's COCOEvalCap scores one results file (a system) as one corpus")
JUDGMENT_ROWS = Corpus(CORPUS_ROWS, "CLIPScore/PAC-S correlation code: one pycocoevalcap image id per judgment row")
PAIR_ROWS = Corpus(
    CORPUS_ROWS, "CLIPScore/PAC-S pairwise code: both captions of every pair scored, a pair per document"
)
CANDIDATES = Corpus(CORPUS_DATASET, "every candidate scored once in one corpus, the judgment rows repeating its score")
PER_VIDEO = Corpus(
    CORPUS_DATASET,
    "G-VEval's correlation.py: one pycocoevalcap id per video (its one candidate), the score repeated per annotator",
)


@dataclass(frozen=True)
class Protocol:
    dataset: str
    name: str  # "paper" | "canonical"
    version: str
    statistics: tuple[str, ...]  # headline first
    rows: str  # how judgments become rows
    references: str  # which references a reference-based metric gets
    resample: str = "image"  # the bootstrap cluster
    replicates: int = DEFAULT_REPLICATES
    seed: int = DEFAULT_SEED
    notes: str = ""
    corpus: Corpus = PER_SYSTEM  # the corpus a corpus-dependent metric scores the dataset's candidates in
    # System kinds whose rows are also left out in a second set of cells (THumB "without Human"):
    # each such cell's dimension is "<dimension>, without <Kind>".
    without: tuple[str, ...] = ()
    # Each annotator's rows correlated apart and the statistics averaged over annotators (EMScore's
    # VATEX-EVAL), instead of one correlation over every judgment row.
    per_annotator: bool = False
    metric_decimals: int | None = None  # metric scores rounded first (EMScore rounds to 4)

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.name}@{self.version}"


_FLAT = "one row per judgment (annotator), metric score repeated"
PROTOCOLS = {
    p.key.split("@")[0]: p
    for p in (
        Protocol(
            "flickr8k-expert",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            _FLAT,
            "the image's 5 captions",
            notes="CLIPScore/PAC-S: 158 self-reference rows dropped, 16,992 rows",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "flickr8k-expert",
            "canonical",
            "1",
            RATING_STATISTICS,
            _FLAT,
            "the image's 5 captions",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "flickr8k-cf",
            "paper",
            "1",
            ("tau_b", "tau_c"),
            "one row per caption, rating = yes-fraction",
            "the image's captions minus judged texts",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "flickr8k-cf",
            "canonical",
            "1",
            RATING_STATISTICS,
            "one row per caption, rating = yes-fraction",
            "the image's captions minus judged texts",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "msvd-eval",
            "paper",
            "1",
            ("tau_b", "tau_c"),
            _FLAT + "; per ACCR dimension",
            "all references",
            notes="G-VEval: 394 rows per dimension",
            corpus=PER_VIDEO,
        ),
        Protocol(
            "msvd-eval",
            "canonical",
            "1",
            RATING_STATISTICS,
            _FLAT + "; per ACCR dimension",
            "all references",
            corpus=PER_VIDEO,
        ),
        # Version 2: the system level compares each system's mean rating with its number as the
        # captioner board forms it (corpus BLEU and METEOR; version 1 averaged sentence scores).
        # Paper version 3: every cell also without the Human system's rows, as VisCE² reports it.
        Protocol(
            "thumb",
            "paper",
            "3",
            ("pearson",),
            "one row per (system, image); with and without Human",
            "the image's 4 references",
            notes="VisCE2 Table 1: Pearson against P, R and total; system level: the board's system numbers",
            without=("human",),
        ),
        Protocol(
            "thumb", "canonical", "2", RATING_STATISTICS, "one row per (system, image)", "the image's 4 references"
        ),
        Protocol(
            "pascal50s",
            "paper",
            "1",
            ("accuracy",),
            "one pair per row; metric tie = wrong",
            "5 random draws of 5 from the 50-reference pool, accuracies averaged",
            corpus=PAIR_ROWS,
        ),
        Protocol(
            "pascal50s",
            "canonical",
            "2",
            ("accuracy", "accuracy_ties_half", "accuracy_ties_second"),
            "one pair per row; a metric tie counts as wrong, half, or for the second caption (one statistic each)",
            "the whole 50-reference pool",
            corpus=PAIR_ROWS,
        ),
        # The sets added with the catalogue (docs/datasets.md §2.6-2.9). Their papers' headline statistic
        # first; no published number is reproduced here yet (no real file could be read: §7).
        Protocol(
            "polaris",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            "one row per candidate (one rating each)",
            "the record's references",
            notes="Polos: Kendall tau-c on the test split",
            corpus=CANDIDATES,
        ),
        Protocol(
            "polaris",
            "canonical",
            "1",
            RATING_STATISTICS,
            "one row per candidate",
            "the record's references",
            corpus=CANDIDATES,
        ),
        Protocol(
            "nebula",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            "one row per candidate (one rating each)",
            "the record's references",
            notes="DENEB: Kendall tau-c on the test split",
            corpus=CANDIDATES,
        ),
        Protocol(
            "nebula",
            "canonical",
            "1",
            RATING_STATISTICS,
            "one row per candidate",
            "the record's references",
            corpus=CANDIDATES,
        ),
        Protocol(
            "composite",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            _FLAT + "; correctness (thoroughness apart)",
            "the image's Karpathy captions less the judged human one",
            notes="CLIPScore/PAC-S: Kendall tau-c (tau-b also reported)",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "composite",
            "canonical",
            "1",
            RATING_STATISTICS,
            _FLAT,
            "the image's Karpathy captions less the judged human one",
            corpus=JUDGMENT_ROWS,
        ),
        Protocol(
            "foil",
            "paper",
            "1",
            ("accuracy",),
            "one pair per foil caption (the original should win); metric tie = wrong",
            "the image's other 4 COCO captions (the 4-ref setting)",
            notes="FOIL as CLIPScore/PAC-S score it; the 1-ref setting (each pair's stored draw): manage.py reproduce foil",
            corpus=PAIR_ROWS,
        ),
        Protocol(
            "foil",
            "canonical",
            "2",
            ("accuracy", "accuracy_ties_half", "accuracy_ties_second"),
            "one pair per foil caption; a metric tie counts as wrong, half, or for the second caption",
            "the image's other 4 COCO captions",
            corpus=PAIR_ROWS,
        ),
        Protocol(
            "vatex-eval",
            "paper",
            "1",
            ("tau_b", "spearman"),
            "one row per annotator; each annotator's correlation, averaged over the three",
            "the row's references (the 9-reference setting)",
            notes="EMScore: Kendall and Spearman per annotator on scores rounded to 4 decimals, then averaged",
            corpus=CANDIDATES,
            per_annotator=True,
            metric_decimals=4,
        ),
        Protocol("vatex-eval", "canonical", "1", RATING_STATISTICS, _FLAT, "the row's references", corpus=CANDIDATES),
    )
}


PAIRWISE_STATISTICS = ("accuracy", "accuracy_ties_half")  # a pairwise dataset without a known protocol
CORPUS_WORDS = {
    CORPUS_ROWS: "one document per row of the protocol",
    CORPUS_DATASET: "every candidate once, in one corpus",
    CORPUS_SYSTEM: "each system's captions apart, each once",
}


def dataset_protocols_of(source_format: str, slug: str, kind: str) -> list[Protocol]:
    """The protocols of a dataset's source (`source_format`; paper first), or the generic canonical
    one. Pascal's paper protocol averages random 5-reference draws per pair, which per-caption
    scores against the whole pool cannot give: a pairwise dataset's board cells are its canonical
    protocol's (`manage.py reproduce pascal50s` computes the paper's from the source files)."""
    known = [p for p in PROTOCOLS.values() if p.dataset == source_format]
    if kind == "pairwise":
        known = [p for p in known if p.name == "canonical"]
    if known:
        return sorted(known, key=lambda p: p.name != "paper")
    statistics, version = (RATING_STATISTICS, GENERIC_VERSION) if kind == "rating" else (PAIRWISE_STATISTICS, "1")
    return [Protocol(slug, "canonical", version, statistics, "one row per judgment", "the item's references")]


def protocol(dataset: str, name: str = "paper") -> Protocol:
    try:
        return PROTOCOLS[f"{dataset}/{name}"]
    except KeyError:
        raise KeyError(f"no {name!r} protocol for dataset {dataset!r}") from None


def rating_cells(
    chosen: Protocol,
    human: Sequence[float],
    metric: Sequence[float],
    clusters: Sequence,
    annotators: Sequence | None = None,
) -> dict[str, Interval]:
    """Every rating statistic of the protocol with its cluster-bootstrap interval; all statistics
    share the same resamples (so their intervals are paired). `annotators` (one per row) is what a
    per-annotator protocol groups the rows by."""
    return rating_cells_with_draws(chosen, human, metric, clusters, annotators)[0]


def rating_cells_with_draws(
    chosen: Protocol,
    human: Sequence[float],
    metric: Sequence[float],
    clusters: Sequence,
    annotators: Sequence | None = None,
) -> tuple[dict[str, Interval], dict[str, np.ndarray]]:
    """`rating_cells` and, per statistic, its replicate values (for paired significance tests)."""
    unknown = set(chosen.statistics) - set(RATING_STATISTICS)
    if unknown:
        raise ValueError(f"{chosen.key} has no rating statistic {sorted(unknown)}")
    if chosen.per_annotator and annotators is None:
        raise ValueError(f"{chosen.key} correlates each annotator apart: the rows' annotators are needed")
    human_all, metric_all = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    if chosen.metric_decimals is not None:
        metric_all = np.round(metric_all, chosen.metric_decimals)
    keep = ~(np.isnan(human_all) | np.isnan(metric_all))  # failed scores are left out, and counted by the caller
    cluster_of_row = cluster_index(np.asarray(clusters)[keep])
    groups = np.asarray(annotators)[keep] if chosen.per_annotator else np.zeros(int(keep.sum()))
    # Sorted once per group; each block of replicates is then counted at once (ranked.py).
    ranked = [
        RankedRows(
            human_all[keep][mask], metric_all[keep][mask], cluster_of_row[mask], int(cluster_of_row.max(initial=-1)) + 1
        )
        for mask in (groups == group for group in np.unique(groups))
    ]
    values, ranks = "pearson" in chosen.statistics, "spearman" in chosen.statistics

    def group_statistics(rows: RankedRows, counts: np.ndarray) -> np.ndarray:
        weighed = rows.weigh(counts, values=values, ranks=ranks)
        pairs = pair_count_block(weighed)
        by_name: dict[str, Callable[[], np.ndarray]] = {
            "tau_b": lambda: tau_b_values(pairs),
            "tau_c": lambda: tau_c_values(pairs),
            "pearson": lambda: pearson_values(weighed),
            "spearman": lambda: spearman_values(weighed),
        }
        return np.column_stack([by_name[name]() for name in chosen.statistics])

    def statistics(counts: np.ndarray) -> np.ndarray:
        """One group: its statistics; several (annotators): their mean."""
        return np.mean([group_statistics(rows, counts) for rows in ranked], axis=0)

    intervals, draws = cluster_bootstrap_blocks(
        statistics, cluster_of_row, replicates=chosen.replicates, seed=chosen.seed
    )
    return (
        dict(zip(chosen.statistics, intervals, strict=True)),
        {name: draws[:, index] for index, name in enumerate(chosen.statistics)},
    )
