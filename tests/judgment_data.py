"""The real human-judgment data the suite reads (Flickr8k-Expert/CF, Pascal-50S, MSVD-Eval), kept in
the repository xz-compressed (tests/data/human-judgments/, provenance and licences in its SOURCES.md)
and decompressed once per content into `.capbench/test-data/<digest>/` beside the checkout.

Each decompressed file is checked against the sha256 SOURCES.md gives, so a damaged or edited copy
fails loudly instead of moving every oracle number a little."""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHIVE = ROOT / "tests" / "data" / "human-judgments"
CACHE = ROOT / ".capbench" / "test-data"
_ROW = re.compile(r"^\| (?P<file>[\w./-]+) \|.*\| (?P<sha256>[0-9a-f]{64}) \|$")


def expected_checksums() -> dict[str, str]:
    """{relative path: sha256} from SOURCES.md's table."""
    rows = (_ROW.match(line) for line in (ARCHIVE / "SOURCES.md").read_text(encoding="utf-8").splitlines())
    return {row["file"]: row["sha256"] for row in rows if row}


def _intact(folder: Path) -> bool:
    """Whether every decompressed file is there with SOURCES.md's sha256 (12 MB: a few tens of ms)."""
    return all(
        (folder / name).is_file() and hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha256
        for name, sha256 in expected_checksums().items()
    )


def judgment_data() -> Path:
    """The folder holding the decompressed files (`flickr8k/`, `pascal50s/`, `msvd_eval/`)."""
    compressed = sorted(ARCHIVE.rglob("*.xz"))
    digest = hashlib.sha256()
    for file in compressed:
        digest.update(file.relative_to(ARCHIVE).as_posix().encode() + b"\0" + file.read_bytes())
    target = CACHE / digest.hexdigest()[:16]
    if target.is_dir() and _intact(target):
        return target
    shutil.rmtree(target, ignore_errors=True)  # (an edited or damaged copy: made again)
    CACHE.mkdir(parents=True, exist_ok=True)
    expected = expected_checksums()
    building = Path(tempfile.mkdtemp(prefix="building-", dir=CACHE))
    try:
        for file in compressed:
            name = file.relative_to(ARCHIVE).with_suffix("").as_posix()
            content = lzma.decompress(file.read_bytes())
            actual = hashlib.sha256(content).hexdigest()
            if expected.get(name) != actual:
                raise AssertionError(f"{file}: decompressed sha256 {actual} is not SOURCES.md's {expected.get(name)}")
            (building / name).parent.mkdir(parents=True, exist_ok=True)
            (building / name).write_bytes(content)
        missing = set(expected) - {f.relative_to(ARCHIVE).with_suffix("").as_posix() for f in compressed}
        if missing:
            raise AssertionError(f"SOURCES.md lists files the archive lacks: {sorted(missing)}")
        try:
            os.rename(building, target)  # atomic: another process may have finished first
        except OSError:
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return target
