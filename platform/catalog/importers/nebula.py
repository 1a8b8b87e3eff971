"""Nebula (Matsuda et al., ACCV 2024, the DENEB paper) in the CSV form the authors' evaluation code
reads, `nebula_{train,val,test}.csv` (`mt`, `refs`, `score` in 0-1, `imgid`); read by
`catalog.importers.polos_csv`. The public release is Parquet only (docs/datasets.md §2.7)."""

from __future__ import annotations

from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, SystemRow
from catalog.importers.polos_csv import parse_judged

FORMAT = "nebula"
SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = "test"
DEFAULT_FILE = "nebula_test.csv"
DEFAULT_MANIFEST = None
SYSTEM = SystemRow(
    slug="nebula-candidates",
    name="Nebula candidates",
    kind="mixed",
    description="Candidates from people and captioning models; the file does not say which wrote which.",
)


def parse(path: Path, *, split: str = DEFAULT_SPLIT) -> DatasetBundle:
    return parse_judged(path, f"nebula_{split}", info=_info(split), system=SYSTEM)


def _info(split: str) -> DatasetInfo:
    return DatasetInfo(
        slug="nebula" if split == DEFAULT_SPLIT else f"nebula-{split}",
        title="Nebula" if split == DEFAULT_SPLIT else f"Nebula ({split})",
        source_format=FORMAT,
        modality="image",
        kind="rating",
        dimensions=["overall"],
        rating_scale={"min": 0, "max": 1},
        description=(
            "A diverse, balanced set for hallucination-robust caption metrics: 32,978 images, each with "
            "references and a candidate rated by people (805 annotators; score normalised to 0-1). "
            "Splits: train 26,382, valid 3,298, test 3,298 (the dataset card); published numbers are "
            "on the test split."
        ),
        citation=(
            "K. Matsuda, Y. Wada and K. Sugiura (2024). DENEB: A Hallucination-Robust Automatic Evaluation "
            "Metric for Image Captioning. ACCV, 3570-3586."
        ),
        licence="annotations: no licence stated on the dataset card or repository; images: source terms not stated",
        url="https://huggingface.co/datasets/Ka2ukiMatsuda/Nebula",
        protocol_version="nebula-1",
        protocol_notes=(
            f"Split {split}. One caption and one 'overall' judgment per CSV record (external id r<n>); "
            "items are the images (imgid), references the record's refs list, whitespace-normalised; "
            "columns other than mt, refs, score, imgid are not imported. Published numbers (DENEB "
            "paper, evaluation code): Kendall tau-c over all test records."
        ),
    )
