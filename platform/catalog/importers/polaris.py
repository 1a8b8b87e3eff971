"""Polaris (Wada et al., CVPR 2024, the Polos paper) in its CSV form, `polaris_{train,val,test}.csv`:
one judged candidate per record (`mt`, `refs`, `score` in 0-1, `imgid`); read by
`catalog.importers.polos_csv`. docs/datasets.md §2.6."""

from __future__ import annotations

from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, SystemRow
from catalog.importers.polos_csv import parse_judged

FORMAT = "polaris"
SPLITS = ("train", "val", "test")
DEFAULT_SPLIT = "test"
DEFAULT_FILE = "polaris_test.csv"
DEFAULT_MANIFEST = None
SYSTEM = SystemRow(
    slug="polaris-candidates",
    name="Polaris candidates",
    kind="mixed",
    description=(
        "Candidates written by people and by ten captioning models (the paper); the CSV does not say "
        "which model wrote which."
    ),
)


def parse(path: Path, *, split: str = DEFAULT_SPLIT) -> DatasetBundle:
    return parse_judged(path, f"polaris_{split}", info=_info(split), system=SYSTEM)


def _info(split: str) -> DatasetInfo:
    return DatasetInfo(
        slug="polaris" if split == DEFAULT_SPLIT else f"polaris-{split}",
        title="Polaris" if split == DEFAULT_SPLIT else f"Polaris ({split})",
        source_format=FORMAT,
        modality="image",
        kind="rating",
        dimensions=["overall"],
        rating_scale={"min": 0, "max": 1},
        description=(
            "131K human judgments from 550 evaluators of captions written by people and by ten "
            "captioning models, each rated for overall quality (normalised to 0-1) against its "
            "image and references. Splits: train 78,630, validation 26,268, test 26,122 records "
            "(the dataset card); published numbers are on the test split."
        ),
        citation=(
            "Y. Wada, K. Kaneda, D. Saito and K. Sugiura (2024). Polos: Multimodal Metric Learning from "
            "Human Feedback for Image Captioning. CVPR."
        ),
        licence=(
            "annotations: BSD-3-Clause-Clear (the authors' release); images: as distributed by the "
            "authors (images.tar.gz), source terms not stated"
        ),
        url="https://huggingface.co/datasets/yuwd/Polaris",
        protocol_version="polaris-1",
        protocol_notes=(
            f"Split {split}. One caption and one 'overall' judgment per CSV record (external id r<n>, "
            "n = the record's position); items are the images (imgid), references the record's refs "
            "list, whitespace-normalised; an image whose records name two different reference lists "
            "becomes two items. Columns other than mt, refs, score, imgid are not imported. Published "
            "numbers (Polos paper): Kendall tau-c over all test records."
        ),
    )
