"""The archive's format and its check (plumbing/backups/__init__.py describes the members): every
member present, none added, each of the size and sha256 the manifest says; the errors and the
summary that backup and restore report."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import tarfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

FORMAT = 1
MANIFEST = "manifest.json"
MANIFEST_SUM = "manifest.json.sha256"
DATABASE = "database/"
FILES = "files/"
CHUNK = 1 << 20
Log = Callable[[str], None]


class BackupError(Exception):
    """A backup or restore that cannot go on; the message names the archive member, table or file."""


@dataclass
class Summary:
    tables: int = 0
    rows: int = 0
    files: int = 0
    file_bytes: int = 0
    archive_bytes: int = 0
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)  # listed, gone when read: not in the archive
    missing: list[str] = field(default_factory=list)  # named by a dumped row, not in the archive


def quiet(_: str) -> None:
    pass


def capbench_version() -> str:
    try:
        return importlib.metadata.version("capbench")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class Hashing:
    """A reader that hashes and counts what passes through it (into the archive, or out of it)."""

    def __init__(self, raw: IO[bytes]):
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data


@dataclass
class Archive:
    """A checked archive: its manifest, and where each member's data lies in the file."""

    path: Path
    manifest: dict[str, Any]
    members: dict[str, tarfile.TarInfo]

    @property
    def tables(self) -> dict[str, dict[str, Any]]:
        return self.manifest["tables"]

    @property
    def files(self) -> list[str]:
        return [name.removeprefix(FILES) for name in self.manifest["members"] if name.startswith(FILES)]


def member_name_check(name: str) -> None:
    """A member becomes a table or a stored file's name: nothing that could leave the store. Only
    safety is checked (a stored name may hold any other character: a media's keeps its file's
    suffix); backup checks each file's name the same way, so what it writes restore takes back."""
    if name.startswith("/"):
        problem = "an absolute path"
    elif "\\" in name:
        problem = "a backslash"
    elif any(unicodedata.category(character) == "Cc" for character in name):
        problem = "a control character"  # NUL among them
    elif any(part in ("", ".", "..") for part in name.split("/")):
        problem = "an empty, '.' or '..' part"
    else:
        return
    raise BackupError(f"member {name!r}: refused, its name has {problem}")


def archive_check(path: Path, *, log: Log = quiet) -> Archive:
    """Read the archive and check it whole against its manifest: every member present, none
    added, each of the size and sha256 the manifest says. Nothing is touched."""
    if not path.is_file():
        raise BackupError(f"{path}: no such file")
    try:
        with tarfile.open(path, "r:") as archive:
            found = _plain_members(path, archive)
            manifest = _manifest(path, archive, found)
            listed: dict[str, dict] = manifest["members"]
            _listing_check(path, found, listed)
            for name, expected_member in listed.items():
                _member_check(archive, found[name], expected_member)
            log(f"{path}: {len(listed):,} members checked against the manifest")
            return Archive(path=path, manifest=manifest, members=found)
    except tarfile.TarError as error:
        raise BackupError(f"{path}: not a readable tar archive ({error})") from None


def _plain_members(path: Path, archive: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    """The archive's members by name: each a plain file, none twice."""
    found: dict[str, tarfile.TarInfo] = {}
    for info in archive.getmembers():
        if info.name in found:
            raise BackupError(f"{path}: member {info.name} appears twice")
        if not info.isfile():
            raise BackupError(f"{path}: member {info.name} is not a plain file")
        found[info.name] = info
    return found


def _manifest(path: Path, archive: tarfile.TarFile, found: dict[str, tarfile.TarInfo]) -> dict[str, Any]:
    """The manifest, once its sha256 matches the one its sum member holds and its format is ours."""
    for needed in (MANIFEST, MANIFEST_SUM):
        if needed not in found:
            raise BackupError(f"{path}: no member {needed}: not a CapBench backup, or cut short")
    text = _read(archive, found[MANIFEST])
    expected = _read(archive, found[MANIFEST_SUM]).decode("ascii", "replace").split()[:1]
    if [hashlib.sha256(text).hexdigest()] != expected:
        raise BackupError(f"{path}: member {MANIFEST} is damaged: its sha256 is not the one {MANIFEST_SUM} holds")
    manifest = json.loads(text)
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{path}: archive format {manifest.get('format')!r}; this CapBench reads {FORMAT}")
    return manifest


def _listing_check(path: Path, found: dict[str, tarfile.TarInfo], listed: dict[str, dict]) -> None:
    """Every member the manifest lists present under a safe name, and no other (but its own two)."""
    for name in listed:
        member_name_check(name)
        if name not in found:
            raise BackupError(f"{path}: member {name} is missing (the manifest lists it)")
    extra = sorted(set(found) - set(listed) - {MANIFEST, MANIFEST_SUM})
    if extra:
        raise BackupError(f"{path}: member {extra[0]} is not in the manifest")


def archive_warnings(manifest: dict[str, Any]) -> list[str]:
    """What the archive lacks: each stored file a row in it names that was not in the store (removed
    after the snapshot was taken: such a row's file will not be there after a restore)."""
    return [
        f"stored file {name} is named by a row in the archive but is not in it (removed from the store)"
        for name in manifest.get("missing", [])
    ]


def _read(archive: tarfile.TarFile, info: tarfile.TarInfo) -> bytes:
    handle = archive.extractfile(info)
    assert handle is not None  # a plain file (checked)
    return handle.read()


def _member_check(archive: tarfile.TarFile, info: tarfile.TarInfo, expected: dict[str, Any]) -> None:
    if info.size != expected["size"]:
        raise BackupError(f"member {info.name} is damaged: {info.size:,} bytes, the manifest says {expected['size']:,}")
    handle = archive.extractfile(info)
    assert handle is not None
    hashing = Hashing(handle)
    while hashing.read(CHUNK):
        pass
    digest = hashing.digest.hexdigest()
    if digest != expected["sha256"]:
        raise BackupError(
            f"member {info.name} is damaged: its sha256 is {digest}, the manifest says {expected['sha256']}"
        )
