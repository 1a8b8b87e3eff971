"""Nebula (Matsuda et al., ACCV 2024, the DENEB paper) in the CSV form the authors' evaluation code
reads, `nebula_{train,val,test}.csv` (`mt`, `refs`, `score` in 0-1, `imgid`); read by
`catalog.importers.polos_csv`. The public release is Parquet only (docs/datasets.md §2.7).

Two versions of the test split: `test`, the scores as first released, and `test-corrected`, the
same records with the human scores of a later, corrected release (arXiv 2512.21582 reports on it),
read from `nebula_test_corrected.{csv,json}` in the same shapes and matched to each record by image
and candidate text (imgid + mt)."""

from __future__ import annotations

from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, SystemRow
from catalog.importers.errors import ImportFormatError
from catalog.importers.polos_csv import parse_judged

FORMAT = "nebula"
SPLITS = ("train", "val", "test", "test-corrected")
CORRECTED = "test-corrected"
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
    if split != CORRECTED:
        return parse_judged(path, f"nebula_{split}", info=_info(split), system=SYSTEM)
    bundle = parse_judged(path, "nebula_test", info=_info(split), system=SYSTEM)
    corrected = parse_judged(path, "nebula_test_corrected", info=_info(split), system=SYSTEM)
    return _corrected(bundle, corrected, path)


def _corrected(bundle: DatasetBundle, corrected: DatasetBundle, path: Path) -> DatasetBundle:
    """`bundle`'s judgments with the scores `corrected` gives the same (image, candidate text)."""
    scores: dict[tuple[str, str], float] = {}
    for (image, text), value in _judged(corrected):
        if scores.setdefault((image, text), value) != value:
            raise ImportFormatError(path, None, "score", f"the corrected release scores {text!r} on {image} twice")
    changed = unmatched = 0
    judged = _judged(bundle)
    for judgment, (key, value) in zip(bundle.judgments, judged, strict=True):
        if key not in scores:
            unmatched += 1
            continue
        changed += scores[key] != value
        judgment.value = scores[key]
    bundle.report["corrected_scores"] = changed
    bundle.report["records_without_a_correction"] = unmatched
    if unmatched:
        bundle.warnings.append(
            f"{unmatched} of {len(judged)} test records have no record in the corrected release (first scores kept)"
        )
    return bundle


def _judged(bundle: DatasetBundle) -> list[tuple[tuple[str, str], float]]:
    """Each judgment as ((image file, candidate text), score), in the bundle's order."""
    media = {item.external_id: item.media or "" for item in bundle.items}
    texts = {caption.key: caption.text for caption in bundle.captions}
    return [((media[j.caption.item], texts[j.caption]), j.value) for j in bundle.judgments]


_VERSIONS = (
    "Two versions of the test split: 'test', the human scores as first released (the DENEB paper's "
    "numbers), and 'test-corrected', the same records with a later release's corrected scores "
    "(arXiv 2512.21582's numbers)."
)


def _info(split: str) -> DatasetInfo:
    return DatasetInfo(
        slug="nebula" if split == DEFAULT_SPLIT else f"nebula-{split}",
        title={DEFAULT_SPLIT: "Nebula", CORRECTED: "Nebula (corrected scores)"}.get(split, f"Nebula ({split})"),
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
        protocol_version="nebula-1-corrected" if split == CORRECTED else "nebula-1",
        protocol_notes=(
            _VERSIONS + f" Split {split}. One caption and one 'overall' judgment per CSV record (external id r<n>); "
            "items are the images (imgid), references the record's refs list, whitespace-normalised; "
            "columns other than mt, refs, score, imgid are not imported. Published numbers (DENEB "
            "paper, evaluation code): Kendall tau-c over all test records."
        ),
    )
