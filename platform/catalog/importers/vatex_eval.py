"""VATEX-EVAL (Shi et al., CVPR 2022, the EMScore paper): four pickled numpy arrays, read with the
restricted unpickler of `catalog.importers.safe_pickle` (never `pickle.load`):

- `candidates_list.pkl`: the N candidate captions;
- `gts_list.pkl`: N rows of references (the video's VATEX captions left after the candidate);
- `human_scores.pkl`: 3N ratings, annotator by annotator (the EMScore code reshapes it to 3 x N);
- `video_ids.pkl`: the N candidates' VATEX video ids (`<YouTube id>_<start>_<end>`).

Items are the videos (media `<video id>.mp4`); a video's candidates must share its references.
Each candidate gets three judgments (annotators 1-3) on "overall". docs/datasets.md §2.10."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    JudgmentRow,
    MediaRow,
    SystemRow,
    normalise_whitespace,
)
from catalog.importers.errors import ImportFormatError
from catalog.importers.safe_pickle import load_array
from catalog.importers.sources import parse_float, parse_text, parse_text_list, sibling_file, source_file

FORMAT = "vatex-eval"
DEFAULT_FILE = "candidates_list.pkl"
REFERENCES_FILE = "gts_list.pkl"
SCORES_FILE = "human_scores.pkl"
VIDEO_IDS_FILE = "video_ids.pkl"
DEFAULT_MANIFEST = None
ANNOTATORS = 3
SCALE = (1.0, 5.0)
SYSTEM = SystemRow(
    slug="vatex-eval-candidates",
    name="VATEX-EVAL candidates",
    kind="mixed",
    description="Candidates from video captioning models and people; the files do not say which wrote which.",
)


def parse(path: Path) -> DatasetBundle:
    candidates_file = source_file(path, DEFAULT_FILE)
    files = {
        name: sibling_file(candidates_file, name, required=True)
        for name in (REFERENCES_FILE, SCORES_FILE, VIDEO_IDS_FILE)
    }
    candidates = _texts(load_array(candidates_file), candidates_file)
    count = len(candidates)
    videos = _texts(load_array(files[VIDEO_IDS_FILE]), files[VIDEO_IDS_FILE], length=count)
    references = _reference_rows(load_array(files[REFERENCES_FILE]), files[REFERENCES_FILE], count)
    scores = _scores(load_array(files[SCORES_FILE]), files[SCORES_FILE], count)
    bundle = DatasetBundle(info=_info(), systems=[SYSTEM])
    items: dict[str, ItemRow] = {}
    for index, (video, text, refs) in enumerate(zip(videos, candidates, references, strict=True)):
        item = items.setdefault(video, ItemRow(external_id=video, media=f"{video}.mp4", references=refs))
        if item.references != refs:
            raise ImportFormatError(
                files[REFERENCES_FILE], None, f"[{index}]", f"references differ from an earlier row of video {video!r}"
            )
        key = CaptionKey(item=video, system=SYSTEM.slug, external_id=f"r{index + 1}")
        bundle.captions.append(CaptionRow(key=key, text=normalise_whitespace(text)))
        for annotator in range(ANNOTATORS):
            value = scores[annotator][index]
            if not SCALE[0] <= value <= SCALE[1]:
                bundle.warnings.append(
                    f"{files[SCORES_FILE]}: [{annotator * count + index}] = {value} is outside {SCALE[0]:g}-{SCALE[1]:g}"
                )
            bundle.judgments.append(
                JudgmentRow(caption=key, dimension="overall", annotator=f"annotator_{annotator + 1}", value=value)
            )
    bundle.items = list(items.values())
    bundle.media = [MediaRow(name=item.media or "", kind="video") for item in bundle.items]
    bundle.report["videos"] = len(items)
    return bundle


def _plain(value: Any, path: Path) -> list:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return list(value)
    raise ImportFormatError(path, None, None, f"expected a numpy array or a list, found {type(value).__name__}")


def _texts(value: Any, path: Path, length: int | None = None) -> list[str]:
    rows = _plain(value, path)
    if length is not None and len(rows) != length:
        raise ImportFormatError(path, None, None, f"{len(rows)} entries, but {DEFAULT_FILE} has {length}")
    if not rows:
        raise ImportFormatError(path, None, None, "empty")
    return [parse_text(text, path=path, line=None, field=f"[{index}]").strip() for index, text in enumerate(rows)]


def _reference_rows(value: Any, path: Path, length: int) -> list[list[str]]:
    rows = _plain(value, path)
    if len(rows) != length:
        raise ImportFormatError(path, None, None, f"{len(rows)} rows, but {DEFAULT_FILE} has {length}")
    found = []
    for index, row in enumerate(rows):
        row = row.tolist() if isinstance(row, np.ndarray) else row
        refs = parse_text_list(row, path=path, line=None, field=f"[{index}]")
        found.append([normalise_whitespace(ref) for ref in refs])
    return found


def _scores(value: Any, path: Path, length: int) -> list[list[float]]:
    """3N ratings → 3 lists of N (annotator-major, as the EMScore code reshapes them)."""
    flat = (
        np.asarray(value, dtype=object).reshape(-1).tolist() if isinstance(value, np.ndarray) else _plain(value, path)
    )
    if len(flat) != ANNOTATORS * length:
        raise ImportFormatError(
            path, None, None, f"{len(flat)} ratings, expected {ANNOTATORS} x {length} (three annotators per candidate)"
        )
    values = [parse_float(raw, path=path, line=None, field=f"[{index}]") for index, raw in enumerate(flat)]
    return [values[annotator * length : (annotator + 1) * length] for annotator in range(ANNOTATORS)]


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="vatex-eval",
        title="VATEX-EVAL",
        source_format=FORMAT,
        modality="video",
        kind="rating",
        dimensions=["overall"],
        rating_scale={"min": SCALE[0], "max": SCALE[1]},
        description=(
            "Video captions for VATEX validation videos, each rated by three annotators; references "
            "are the video's other VATEX captions (up to 9). Introduced with EMScore."
        ),
        citation=(
            "Y. Shi, X. Yang, H. Xu, C. Yuan, B. Li, W. Hu and Z.-J. Zha (2022). EMScore: Evaluating Video "
            "Captioning via Coarse-Grained and Fine-Grained Embedding Matching. CVPR."
        ),
        licence=(
            "ratings: no licence stated (EMScore repository, Google Drive); references: VATEX captions "
            "(CC BY 4.0); videos: YouTube terms (not distributed)"
        ),
        url="https://github.com/ShiYaya/emscore",
        protocol_version="vatex-eval-1",
        protocol_notes=(
            "One caption per candidate row (external id r<n>), three judgments (annotator_1..3, "
            "'overall'; rows of human_scores.pkl are annotator-major); item references = the row's "
            "whole reference list (the 9-ref setting; the 1-ref setting is its first reference; "
            "no-ref metrics use the video). Published numbers (EMScore, G-VEval): Kendall tau-b and "
            "Spearman computed per annotator on metric scores rounded to 4 decimals, then averaged "
            "over the three annotators, as the board's paper protocol does (its canonical protocol "
            "correlates all judgment rows at once)."
        ),
    )
