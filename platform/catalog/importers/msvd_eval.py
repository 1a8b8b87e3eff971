"""MSVD-Eval (G-VEval, `MSVD-Eval.json`): 197 videos, one candidate each, two annotators rating
accuracy, completeness, conciseness and relevance (1-5). One judgment per annotator and dimension;
the file's fifth number (their mean) is checked, not stored."""

from __future__ import annotations

from pathlib import Path

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
from catalog.importers.sources import (
    json_document,
    parse_float,
    parse_text,
    parse_text_list,
    require_keys,
    require_object,
    source_file,
)

FORMAT = "msvd-eval"
DEFAULT_FILE = "MSVD-Eval.json"
DEFAULT_MANIFEST = None
DIMENSIONS = ("accuracy", "completeness", "conciseness", "relevance")
SYSTEM = SystemRow(
    slug="msvd-eval-candidates",
    name="MSVD-Eval candidates",
    kind="mixed",
    description="The candidate caption rated for each video (origin not stated).",
)


def parse(path: Path) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    document = require_object(json_document(source), path=source, line=None)
    bundle = DatasetBundle(info=_info(), systems=[SYSTEM])
    for video_id, raw in document.items():
        entry = require_object(raw, path=source, line=None, field=video_id)
        require_keys(entry, ["vname", "ref", "candidate", "human_score"], path=source, line=None)
        video = parse_text(entry["vname"], path=source, line=None, field=f"{video_id}.vname")
        references = parse_text_list(entry["ref"], path=source, line=None, field=f"{video_id}.ref")
        text = parse_text(entry["candidate"], path=source, line=None, field=f"{video_id}.candidate")
        key = CaptionKey(item=video_id, system=SYSTEM.slug)
        bundle.media.append(MediaRow(name=video, kind="video"))
        bundle.items.append(
            ItemRow(external_id=video_id, media=video, references=[normalise_whitespace(ref) for ref in references])
        )
        bundle.captions.append(CaptionRow(key=key, text=normalise_whitespace(text)))
        bundle.judgments += _annotator_rows(entry["human_score"], key, path=source, field=f"{video_id}.human_score")
    return bundle


def _annotator_rows(raw: object, key: CaptionKey, *, path: Path, field: str) -> list[JudgmentRow]:
    if not isinstance(raw, list) or not raw:
        raise ImportFormatError(path, None, field, "expected a list of per-annotator score lists")
    rows = []
    for annotator, scores in enumerate(raw, start=1):
        where = f"{field}[{annotator - 1}]"
        if not isinstance(scores, list) or len(scores) != len(DIMENSIONS) + 1:
            raise ImportFormatError(
                path, None, where, "expected [accuracy, completeness, conciseness, relevance, average]"
            )
        values = [
            parse_float(value, path=path, line=None, field=f"{where}[{index}]", low=1, high=5)
            for index, value in enumerate(scores)
        ]
        if abs(sum(values[:4]) / 4 - values[4]) > 1e-6:
            raise ImportFormatError(
                path, None, f"{where}[4]", f"average {values[4]} is not the mean of the four scores"
            )
        rows += [
            JudgmentRow(caption=key, dimension=dimension, annotator=f"annotator_{annotator}", value=value)
            for dimension, value in zip(DIMENSIONS, values[:4], strict=True)
        ]
    return rows


def _info() -> DatasetInfo:
    return DatasetInfo(
        slug="msvd-eval",
        title="MSVD-Eval",
        source_format=FORMAT,
        modality="video",
        kind="rating",
        dimensions=list(DIMENSIONS),
        rating_scale={"min": 1, "max": 5},
        description=(
            "Video captions from MSVD rated by two annotators on accuracy, completeness, conciseness "
            "and relevance (ACCR), introduced with G-VEval. 197 videos in the released file."
        ),
        citation="T. Tong et al. (2024). G-VEval: A Versatile Metric for Evaluating Image and Video Captions Using GPT-4o.",
        licence="research use; videos from MSVD (YouTube terms)",
        url="https://github.com/ztangaj/gveval",
        protocol_version="gveval-1",
        protocol_notes=(
            "One judgment per annotator and dimension (394 annotator rows x 4 dimensions); the "
            "ACCR dimensions are correlated one by one; the file's average is validated, not stored."
        ),
    )
