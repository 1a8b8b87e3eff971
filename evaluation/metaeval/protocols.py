"""Versioned meta-evaluation protocols (metaeval.md §7): how a dataset's human judgments and a
metric's per-row scores become leaderboard cells.

Each dataset has a "paper" protocol, which reproduces the published tables (its headline
statistic first), and a "canonical" one that applies the same rules to every metric and dataset.
A protocol's version changes whenever its numbers would: THumB's and the generic canonical
protocol's are at 2 since their system level compares people with each system's number as the
captioner board forms it (evaluation.metaeval.system_level; docs/metaeval.md §7.1).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from evaluation.metaeval.bootstrap import (
    DEFAULT_REPLICATES,
    DEFAULT_SEED,
    Interval,
    cluster_bootstrap_blocks,
    cluster_index,
)
from evaluation.metaeval.correlation import pearson_values, spearman_values
from evaluation.metaeval.kendall import pair_count_block, tau_b_values, tau_c_values
from evaluation.metaeval.ranked import RankedRows

RATING_STATISTICS = ("tau_b", "tau_c", "pearson", "spearman")

# The version of the protocol every rating dataset without a known one gets (scoring's
# dataset_protocols): 2 since its system level reads the board's system numbers.
GENERIC_VERSION = "2"


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
        ),
        Protocol("flickr8k-expert", "canonical", "1", RATING_STATISTICS, _FLAT, "the image's 5 captions"),
        Protocol(
            "flickr8k-cf",
            "paper",
            "1",
            ("tau_b", "tau_c"),
            "one row per caption, rating = yes-fraction",
            "the image's captions minus judged texts",
        ),
        Protocol(
            "flickr8k-cf",
            "canonical",
            "1",
            RATING_STATISTICS,
            "one row per caption, rating = yes-fraction",
            "the image's captions minus judged texts",
        ),
        Protocol(
            "msvd-eval",
            "paper",
            "1",
            ("tau_b", "tau_c"),
            _FLAT + "; per ACCR dimension",
            "all references",
            notes="G-VEval: 394 rows per dimension",
        ),
        Protocol("msvd-eval", "canonical", "1", RATING_STATISTICS, _FLAT + "; per ACCR dimension", "all references"),
        # Version 2: the system level compares each system's mean rating with its number as the
        # captioner board forms it (corpus BLEU and METEOR; version 1 averaged sentence scores).
        Protocol(
            "thumb",
            "paper",
            "2",
            ("pearson",),
            "one row per (system, image); with and without Human",
            "the image's 4 references",
            notes="VisCE2 Table 1: Pearson against P, R and total; system level: the board's system numbers",
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
        ),
        Protocol(
            "pascal50s",
            "canonical",
            "1",
            ("accuracy", "accuracy_ties_half"),
            "one pair per row",
            "the whole 50-reference pool",
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
        ),
        Protocol("polaris", "canonical", "1", RATING_STATISTICS, "one row per candidate", "the record's references"),
        Protocol(
            "nebula",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            "one row per candidate (one rating each)",
            "the record's references",
            notes="DENEB: Kendall tau-c on the test split",
        ),
        Protocol("nebula", "canonical", "1", RATING_STATISTICS, "one row per candidate", "the record's references"),
        Protocol(
            "composite",
            "paper",
            "1",
            ("tau_c", "tau_b"),
            _FLAT + "; correctness (thoroughness apart)",
            "the image's Karpathy captions less the judged human one",
            notes="CLIPScore/PAC-S: Kendall tau-c (tau-b also reported)",
        ),
        Protocol(
            "composite",
            "canonical",
            "1",
            RATING_STATISTICS,
            _FLAT,
            "the image's Karpathy captions less the judged human one",
        ),
        Protocol(
            "foil",
            "paper",
            "1",
            ("accuracy",),
            "one pair per foil caption (the original should win); metric tie = wrong",
            "the image's other 4 COCO captions (the 4-ref setting)",
            notes="FOIL as CLIPScore/PAC-S score it; the 1-ref setting (each pair's stored draw) is not computed",
        ),
        Protocol(
            "foil",
            "canonical",
            "1",
            ("accuracy", "accuracy_ties_half"),
            "one pair per foil caption",
            "the image's other 4 COCO captions",
        ),
    )
}


def protocol(dataset: str, name: str = "paper") -> Protocol:
    try:
        return PROTOCOLS[f"{dataset}/{name}"]
    except KeyError:
        raise KeyError(f"no {name!r} protocol for dataset {dataset!r}") from None


def rating_cells(
    chosen: Protocol, human: Sequence[float], metric: Sequence[float], clusters: Sequence
) -> dict[str, Interval]:
    """Every rating statistic of the protocol with its cluster-bootstrap interval; all statistics
    share the same resamples (so their intervals are paired)."""
    return rating_cells_with_draws(chosen, human, metric, clusters)[0]


def rating_cells_with_draws(
    chosen: Protocol, human: Sequence[float], metric: Sequence[float], clusters: Sequence
) -> tuple[dict[str, Interval], dict[str, np.ndarray]]:
    """`rating_cells` and, per statistic, its replicate values (for paired significance tests)."""
    unknown = set(chosen.statistics) - set(RATING_STATISTICS)
    if unknown:
        raise ValueError(f"{chosen.key} has no rating statistic {sorted(unknown)}")
    human_all, metric_all = np.asarray(human, dtype=float), np.asarray(metric, dtype=float)
    keep = ~(np.isnan(human_all) | np.isnan(metric_all))  # failed scores are left out, and counted by the caller
    cluster_of_row = cluster_index(np.asarray(clusters)[keep])
    # Sorted once; each block of replicates is then counted at once (ranked.py).
    ranked = RankedRows(human_all[keep], metric_all[keep], cluster_of_row)
    values, ranks = "pearson" in chosen.statistics, "spearman" in chosen.statistics

    def statistics(counts: np.ndarray) -> np.ndarray:
        weighed = ranked.weigh(counts, values=values, ranks=ranks)
        pairs = pair_count_block(weighed)
        by_name: dict[str, Callable[[], np.ndarray]] = {
            "tau_b": lambda: tau_b_values(pairs),
            "tau_c": lambda: tau_c_values(pairs),
            "pearson": lambda: pearson_values(weighed),
            "spearman": lambda: spearman_values(weighed),
        }
        return np.column_stack([by_name[name]() for name in chosen.statistics])

    intervals, draws = cluster_bootstrap_blocks(
        statistics, cluster_of_row, replicates=chosen.replicates, seed=chosen.seed
    )
    return (
        dict(zip(chosen.statistics, intervals, strict=True)),
        {name: draws[:, index] for index, name in enumerate(chosen.statistics)},
    )
