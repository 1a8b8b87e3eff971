"""MSR-VTT (`train_val_videodatainfo.json`, `test_videodatainfo.json`): 10,000 web video clips with
20 captions each. One split is imported as one video captioner benchmark (default: test, 2,990 clips;
validate 497, train 6,513).

Item external id: the `video_id` (`video7010`), as MSR-VTT results files name the clip; media
`<video_id>.mp4`, the name of the clip in the distributed video archives. References: the clip's
sentences in `sen_id` order, whitespace-normalised."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from catalog.importers.bundle import DatasetBundle, DatasetInfo, ItemRow, MediaRow, normalise_whitespace
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import json_document, parse_int, parse_text, require_object, source_file

FORMAT = "msrvtt"
DEFAULT_FILE = "test_videodatainfo.json"
TRAIN_VAL_FILE = "train_val_videodatainfo.json"
DEFAULT_MANIFEST = None
SPLITS = ("test", "validate", "train")
DEFAULT_SPLIT = "test"


def parse(path: Path, *, split: str = DEFAULT_SPLIT) -> DatasetBundle:
    """`path` is either file, or the folder holding both (the split picks the file)."""
    source = source_file(path, DEFAULT_FILE if split == "test" else TRAIN_VAL_FILE)
    document = require_object(json_document(source), path=source, line=None)
    videos = _videos(document, source)
    references = _sentences(document, source, {video_id for video_id, _, _ in videos})
    chosen = [(video_id, where) for video_id, video_split, where in videos if video_split == split]
    if not chosen:
        present = Counter(video_split for _, video_split, _ in videos)
        listed = ", ".join(f"{key} {count:,}" for key, count in sorted(present.items())) or "none"
        raise ImportFormatError(source, None, "split", f"no video has split {split!r} (this file has: {listed})")
    bundle = DatasetBundle(info=_info(split))
    for video_id, where in chosen:
        if not references.get(video_id):
            raise ImportFormatError(
                source, None, where, f"video {video_id!r} has no sentence; a benchmark item needs references"
            )
        bundle.items.append(ItemRow(external_id=video_id, media=f"{video_id}.mp4", references=references[video_id]))
        bundle.media.append(MediaRow(name=f"{video_id}.mp4", kind="video"))
    bundle.report["videos_in_other_splits"] = len(videos) - len(chosen)
    return bundle


def _list(document: dict, key: str, source: Path) -> list[Any]:
    if key not in document:
        raise ImportFormatError(source, None, key, "missing (not an MSR-VTT videodatainfo file)")
    if not isinstance(document[key], list):
        raise ImportFormatError(source, None, key, f"expected a list, found {type(document[key]).__name__}")
    return document[key]


def _videos(document: dict, source: Path) -> list[tuple[str, str, str]]:
    """(video_id, split, JSON path) of every video, checked."""
    videos: list[tuple[str, str, str]] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(_list(document, "videos", source)):
        where = f"videos[{index}]"
        entry = require_object(raw, path=source, line=None, field=where)
        for key in ("video_id", "split"):
            if key not in entry:
                raise ImportFormatError(source, None, f"{where}.{key}", "missing")
        video_id = parse_text(entry["video_id"], path=source, line=None, field=f"{where}.video_id")
        if video_id != video_id.strip() or "/" in video_id or "\\" in video_id:
            raise ImportFormatError(source, None, f"{where}.video_id", f"expected a bare name, found {video_id!r}")
        if video_id in seen:
            raise ImportFormatError(source, None, f"{where}.video_id", f"{video_id!r} also at {seen[video_id]}")
        seen[video_id] = where
        if entry["split"] not in SPLITS:
            raise ImportFormatError(
                source, None, f"{where}.split", f"expected one of {', '.join(SPLITS)}, found {entry['split']!r}"
            )
        videos.append((video_id, entry["split"], where))
    return videos


def _sentences(document: dict, source: Path, known: set[str]) -> dict[str, list[str]]:
    """Every video's captions in sen_id order."""
    rows: list[tuple[int, str, str]] = []
    seen: dict[int, str] = {}
    for index, raw in enumerate(_list(document, "sentences", source)):
        where = f"sentences[{index}]"
        entry = require_object(raw, path=source, line=None, field=where)
        for key in ("sen_id", "video_id", "caption"):
            if key not in entry:
                raise ImportFormatError(source, None, f"{where}.{key}", "missing")
        sen_id = parse_int(entry["sen_id"], path=source, line=None, field=f"{where}.sen_id", low=0)
        if sen_id in seen:
            raise ImportFormatError(source, None, f"{where}.sen_id", f"sen_id {sen_id} also at {seen[sen_id]}")
        seen[sen_id] = where
        video_id = entry["video_id"]
        if video_id not in known:
            raise ImportFormatError(source, None, f"{where}.video_id", f"{video_id!r} is not in videos")
        caption = parse_text(entry["caption"], path=source, line=None, field=f"{where}.caption")
        rows.append((sen_id, video_id, normalise_whitespace(caption)))
    references: dict[str, list[str]] = {}
    for _, video_id, caption in sorted(rows):
        references.setdefault(video_id, []).append(caption)
    return references


def _info(split: str) -> DatasetInfo:
    return DatasetInfo(
        slug=f"msrvtt-{split}",
        title=f"MSR-VTT ({split})",
        source_format=FORMAT,
        modality="video",
        kind="benchmark",
        dimensions=[],
        rating_scale={},
        description=(
            "MSR Video to Text: 10,000 web video clips in 20 categories, each described by 20 crowd "
            "workers; train 6,513, validate 497, test 2,990 clips. This dataset is the "
            f"{split} split. Submit one caption per video id."
        ),
        citation=(
            "J. Xu, T. Mei, T. Yao and Y. Rui (2016). MSR-VTT: A Large Video Description Dataset for "
            "Bridging Video and Language. CVPR."
        ),
        licence=(
            "annotations: Microsoft Research terms for MSR-VTT (research use); videos from YouTube "
            "(YouTube terms, not redistributed)"
        ),
        url="https://www.microsoft.com/en-us/research/publication/msr-vtt-a-large-video-description-dataset-for-bridging-video-and-language/",
        protocol_version="msrvtt-1",
        protocol_notes=(
            f"The videos whose split is {split!r}, in file order (external id = video_id, media "
            "<video_id>.mp4); references: their sentences in sen_id order, whitespace-normalised. "
            "Dropped: info, id, category, url, start/end times, sen_id, other splits."
        ),
    )
