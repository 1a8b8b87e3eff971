"""MSVD, the Microsoft Research Video Description corpus (YouTube2Text): `AllVideoDescriptions.txt`
(the English descriptions, one a line: `<clip> <description>`, where a clip is
`<YouTube id>_<start>_<end>`; lines starting with `#` are a header) and `youtube_mapping.txt` beside
it (`<clip> vid<N>`, the numbering of the 1,970 clips the standard split uses). One split is imported
as one video captioner benchmark: vid1–vid1200 train, vid1201–vid1300 val, vid1301–vid1970 test
(default).

Item external id: `vid<N>`, the name captioning code for the standard split gives a clip; the clip
name is kept in the item's metadata (`{"clip": ...}`); media `<clip>.avi`, the file name in the
distributed `YouTubeClips.tar`."""

from __future__ import annotations

import re
from pathlib import Path

from catalog.importers.bundle import DatasetBundle, DatasetInfo, ItemRow, MediaRow, normalise_whitespace
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import sibling_file, source_file, text_lines

FORMAT = "msvd"
DEFAULT_FILE = "AllVideoDescriptions.txt"
MAPPING_FILE = "youtube_mapping.txt"
DEFAULT_MANIFEST = None
SPLITS = ("test", "val", "train")
DEFAULT_SPLIT = "test"
# The standard split (1,200 / 100 / 670 clips) by the mapping's numbering.
SPLIT_RANGES = {"train": range(1, 1201), "val": range(1201, 1301), "test": range(1301, 1971)}
_CLIP = re.compile(r"^\S+_\d+_\d+$")
_VID = re.compile(r"^vid([1-9][0-9]*)$")


def parse(path: Path, *, split: str = DEFAULT_SPLIT) -> DatasetBundle:
    source = source_file(path, DEFAULT_FILE)
    mapping_file = sibling_file(source, MAPPING_FILE, required=True)
    mapping = _mapping(mapping_file)
    bundle = DatasetBundle(info=_info(split))
    descriptions = _descriptions(source, bundle.warnings)
    wanted = SPLIT_RANGES[split]
    for clip, (number, line) in mapping.items():
        if clip not in descriptions:
            raise ImportFormatError(
                mapping_file,
                line,
                "clip",
                f"{clip!r} has no description in {DEFAULT_FILE}; a benchmark item needs references",
            )
        if number not in wanted:
            continue
        bundle.items.append(
            ItemRow(
                external_id=f"vid{number}", media=f"{clip}.avi", references=descriptions[clip], metadata={"clip": clip}
            )
        )
    bundle.items.sort(key=_by_number)
    bundle.media = [MediaRow(name=item.media, kind="video") for item in bundle.items if item.media]
    bundle.report["clips_in_other_splits"] = len(mapping) - len(bundle.items)
    bundle.report["described_clips_not_in_mapping"] = len(descriptions.keys() - mapping.keys())
    return bundle


def _by_number(item: ItemRow) -> int:
    return int(item.external_id.removeprefix("vid"))


def _mapping(path: Path) -> dict[str, tuple[int, int]]:
    """clip → (N of vid<N>, line); every N within the standard 1,970 and each clip and N once."""
    mapping: dict[str, tuple[int, int]] = {}
    numbers: dict[int, int] = {}
    for line, text in text_lines(path):
        if not text.strip():
            continue
        parts = text.split()
        if len(parts) != 2:
            raise ImportFormatError(path, line, None, "expected '<clip> vid<N>'")
        clip, vid = parts
        match = _VID.match(vid)
        if not match or int(match.group(1)) > 1970:
            raise ImportFormatError(path, line, "vid", f"expected vid1 … vid1970, found {vid!r}")
        if not _CLIP.match(clip):
            raise ImportFormatError(path, line, "clip", f"expected <YouTube id>_<start>_<end>, found {clip!r}")
        number = int(match.group(1))
        if clip in mapping:
            raise ImportFormatError(path, line, "clip", f"{clip!r} also on line {mapping[clip][1]}")
        if number in numbers:
            raise ImportFormatError(path, line, "vid", f"{vid!r} also on line {numbers[number]}")
        mapping[clip] = (number, line)
        numbers[number] = line
    return mapping


def _descriptions(path: Path, warnings: list[str]) -> dict[str, list[str]]:
    """clip → its descriptions in file order (whitespace-normalised). A line with a clip and no text
    is skipped with a warning."""
    descriptions: dict[str, list[str]] = {}
    for line, text in text_lines(path):
        if not text.strip() or text.startswith("#"):
            continue
        parts = text.split(maxsplit=1)
        clip = parts[0]
        if not _CLIP.match(clip):
            raise ImportFormatError(path, line, "clip", f"expected <YouTube id>_<start>_<end>, found {clip!r}")
        if len(parts) == 1:
            warnings.append(f"{path}, line {line}: clip {clip!r} has no description text (skipped)")
            continue
        descriptions.setdefault(clip, []).append(normalise_whitespace(parts[1]))
    return descriptions


def _info(split: str) -> DatasetInfo:
    return DatasetInfo(
        slug=f"msvd-{split}",
        title=f"MSVD ({split})",
        source_format=FORMAT,
        modality="video",
        kind="benchmark",
        dimensions=[],
        rating_scale={},
        description=(
            "Microsoft Research Video Description corpus (YouTube2Text): short YouTube clips, each with "
            "about 40 English one-sentence descriptions. Standard split of the 1,970 numbered clips: "
            f"1,200 train, 100 val, 670 test. This dataset is the {split} split. Submit one caption per "
            "vid<N> id."
        ),
        citation=(
            "D. L. Chen and W. B. Dolan (2011). Collecting Highly Parallel Data for Paraphrase Evaluation. "
            "ACL. Split: S. Venugopalan et al. (2015), Sequence to Sequence - Video to Text, ICCV; L. Yao "
            "et al. (2015), Describing Videos by Exploiting Temporal Structure, ICCV."
        ),
        licence=(
            "descriptions: Microsoft Research Video Description Corpus terms (research use); videos from "
            "YouTube (YouTube terms, not redistributed)"
        ),
        url="https://www.cs.utexas.edu/users/ml/clamp/videoDescription/",
        protocol_version="msvd-1",
        protocol_notes=(
            f"The clips numbered in {MAPPING_FILE} within the {split} range, in vid order (external id "
            "vid<N>, media <clip>.avi, metadata {'clip': ...}); references: every English description "
            f"of the clip in {DEFAULT_FILE}, in file order, whitespace-normalised (no cleaning, no "
            "de-duplication). Dropped: header lines, clips outside the mapping, description lines "
            "without text (warned)."
        ),
    )
