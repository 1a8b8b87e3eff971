"""Published numbers (×100) the platform reproduces, one table, each with its source (paper, table,
which data version) and the rounding it was printed with: a recomputed value matches when it is
within half a unit of the printed value's last decimal (±0.05 for one decimal). docs/datasets.md §3
holds the same table for people; `manage.py reproduce NAME` prints ours beside each value."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Source:
    paper: str
    table: str
    data: str  # which version of the data the value was computed on
    note: str = ""


@dataclass(frozen=True)
class Published:
    dataset: str  # the importer's format (Dataset.source_format)
    metric: str  # slug
    dimension: str  # a rating dimension, a Pascal category, a FOIL setting; "" = the dataset's headline one
    statistic: str  # tau_b, tau_c, pearson, accuracy
    value: float
    source: str  # a SOURCES key
    decimals: int = 1
    split: str = ""  # the importer's split the value was computed on, where the dataset has versions
    version: str = ""  # that split's dataset version (Dataset.protocol_version), for the board

    @property
    def tolerance(self) -> float:
        """Half a unit of the printed value's last decimal."""
        return 0.5 * 10.0**-self.decimals


SOURCES = {
    "pac-s": Source(
        "Sarto et al., Positive-Augmented Contrastive Learning for Image and Video Captioning Evaluation (CVPR 2023)",
        "Table 1; the repository's README prints the same values to three decimals",
        "Flickr8k-Expert and -CF as CLIPScore/PAC-S process them (docs/datasets.md §2.1-2.2)",
    ),
    "pascal": Source(
        "CLIPScore (Hessel et al., EMNLP 2021) and PAC-S (CVPR 2023)",
        "Pascal-50S accuracy table",
        "Pascal-50S, the mean of 5 random draws of 5 references from the 48-50 reference pool",
    ),
    "clipscore-foil": Source(
        "Hessel et al., CLIPScore (EMNLP 2021)",
        "Table 5",
        "FOIL test pairs; 1 reference or 4 references",
    ),
    "pearl": Source(
        "Hirano et al., arXiv 2512.21582",
        "Table 1, as transcribed in YuigaWada/CaptionEvalKit-for-VLMs benchmarks/expected (not yet checked "
        "against the paper's PDF)",
        "Composite (correctness); Polaris test; Nebula test with the corrected human scores",
    ),
}

_FLICKR8K = {  # metric: (Expert τ-b, Expert τ-c, CF τ-b, CF τ-c)
    "bleu_1": (32.2, 32.3, 17.9, 9.3),
    "bleu_4": (30.6, 30.8, 16.9, 8.7),
    "rouge_l": (32.1, 32.3, 19.9, 10.3),
    "meteor": (41.5, 41.8, 22.3, 11.5),  # CF τ-b: 22.269 in the PAC-S README
    "cider_d": (43.6, 43.9, 24.6, 12.7),
    "spice": (51.7, 44.9, 24.4, 12.0),
}
_PASCAL = {  # metric: HC, HI, HM, MM, mean
    "bleu_4": (60.3, 93.1, 85.7, 57.0, 74.0),
    "cider_d": (66.5, 97.9, 90.7, 65.2, 80.1),
    "meteor": (66.0, 97.7, 94.0, 66.6, 81.1),
}
_FOIL = {  # metric: (1 reference, 4 references)
    "meteor": (78.8, 85.4),
    "rouge_l": (71.7, 79.3),
    "cider_d": (82.5, 90.6),
    "spice": (75.5, 86.1),
}
_PEARL: dict[
    tuple[str, str], dict[str, tuple[float | None, float]]
] = {  # (dataset, dimension): {metric: (τ-b or None, τ-c)}
    ("composite", "correctness"): {
        "bleu_4": (28.3, 30.6),
        "rouge_l": (30.0, 32.4),
        "meteor": (36.0, 38.9),
        "cider_d": (34.9, 37.7),
        "spice": (38.8, 40.3),
    },
    ("polaris", ""): {
        "bleu_4": (None, 46.3),
        "rouge_l": (None, 46.3),
        "meteor": (None, 51.2),
        "cider_d": (None, 52.1),
        "spice": (None, 51.0),
    },
    ("nebula", ""): {
        "bleu_4": (46.5, 44.1),
        "rouge_l": (45.8, 43.4),
        "meteor": (50.2, 47.6),
        "cider_d": (51.5, 48.8),
        "spice": (51.5, 47.4),
    },
}

# Nebula's test split with the corrected human scores: (split, dataset version)
_PEARL_SPLITS = {"nebula": ("test-corrected", "nebula-1-corrected")}

PUBLISHED: tuple[Published, ...] = (
    *(
        Published(dataset, metric, "", statistic, values[at], "pac-s")
        for metric, values in _FLICKR8K.items()
        for at, (dataset, statistic) in enumerate(
            [
                ("flickr8k-expert", "tau_b"),
                ("flickr8k-expert", "tau_c"),
                ("flickr8k-cf", "tau_b"),
                ("flickr8k-cf", "tau_c"),
            ]
        )
    ),
    *(
        Published("pascal50s", metric, category, "accuracy", value, "pascal")
        for metric, values in _PASCAL.items()
        for category, value in zip(("HC", "HI", "HM", "MM", "mean"), values, strict=True)
    ),
    *(
        Published("foil", metric, setting, "accuracy", value, "clipscore-foil")
        for metric, values in _FOIL.items()
        for setting, value in zip(("1-ref", "4-ref"), values, strict=True)
    ),
    *(
        Published(
            dataset,
            metric,
            dimension,
            statistic,
            value,
            "pearl",
            split=_PEARL_SPLITS.get(dataset, ("", ""))[0],
            version=_PEARL_SPLITS.get(dataset, ("", ""))[1],
        )
        for (dataset, dimension), metrics in _PEARL.items()
        for metric, values in metrics.items()
        for statistic, value in zip(("tau_b", "tau_c"), values, strict=True)
        if value is not None
    ),
)

# The datasets whose papers publish no table CapBench could read (docs/datasets.md §3.4): `reproduce`
# prints ours with intervals and says so.
NO_TABLE = {
    "thumb": "THumB's and VisCE²'s correlation tables are not transcribed here yet",
    "msvd-eval": "G-VEval's MSVD-Eval table is not transcribed here yet",
    "vatex-eval": "EMScore's VATEX-EVAL table is not transcribed here yet",
}

# The rows the papers' numbers were computed on: a slice or a re-cut of a dataset is not comparable,
# so the board shows a published value only beside a cell of exactly these rows.
PUBLISHED_ROWS = {
    "flickr8k-expert": 16992,
    "flickr8k-cf": 47830,
    "pascal50s": 1000,
    "composite": 11985,
    "nebula": 3298,  # the test split (its dataset card)
    "polaris": 26122,  # the test split (its dataset card)
}
# FOIL's published values are of its 1-ref and 4-ref settings, which `reproduce foil` computes; the
# board's FOIL cells (the 4 references of each item, per-caption scores) are neither, so none is shown.


def published_of(dataset: str) -> list[Published]:
    """The dataset's published values, in the table's order."""
    return [entry for entry in PUBLISHED if entry.dataset == dataset]


def published_value(
    dataset: str, metric: str, dimension: str, statistic: str, rows: int | None = None, *, version: str = ""
) -> float | None:
    """The papers' number (×100) for a board cell, where one is known and the cell was computed on
    the same rows (`rows`: the cell's n; a demo slice of the dataset gets none) of the same data
    version (`version`: the dataset's; Nebula's published table is of its corrected scores)."""
    if rows is not None and PUBLISHED_ROWS.get(dataset) != rows:
        return None
    for entry in PUBLISHED:
        if (entry.dataset, entry.metric, entry.statistic) != (dataset, metric, statistic):
            continue
        if entry.dimension in ("", dimension) and (not entry.version or entry.version == version):
            return entry.value
    return None
