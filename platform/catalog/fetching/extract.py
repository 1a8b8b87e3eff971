"""Unpacking the members an entry needs from a zip or tar(.gz) archive, safely.

Every member is checked before anything is written, and one that breaks a rule refuses the whole
archive: no absolute path, no `..`, no device or FIFO, no link pointing outside the archive's folder,
and no member larger than `MAX_MEMBER_BYTES`. Links that stay inside are never extracted (only
regular files are). Files are written below the destination folder only, each to a temporary name
first and renamed into place, so an interrupted extraction leaves no half-written file behind."""

from __future__ import annotations

import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import IO

from catalog.fetching.errors import FetchError

MAX_MEMBER_BYTES = 4 * 1024**3  # far above any file in the catalogue's archives (the largest is ~150 MB)
CHUNK = 1 << 20


@dataclass(frozen=True)
class Member:
    name: str  # normalised ("./a/b" and "a\\b" read "a/b"): what the patterns match
    size: int
    kind: str  # "file", "dir" or "link" (a link inside the archive's folder: never extracted)
    raw: str = ""  # the name as the archive stores it: what the member is read by


def total_budget(archive: Path) -> int:
    """The most the selected members may unpack to: 20 times the archive (the catalogue's text
    archives unpack to about 5 times theirs, media to about as much) plus 64 MiB; beyond it, a
    zip bomb."""
    return 20 * archive.stat().st_size + (64 << 20)


def extract(archive: Path, destination: Path, patterns: tuple[str, ...]) -> list[Path]:
    """The files of `archive` whose member path matches one of `patterns` (fnmatch), written
    below `destination` under their member paths; an existing file of the same size is kept."""
    with _opened(archive) as (members, reader):
        selected = [member for member in members if any(fnmatchcase(member.name, p) for p in patterns)]
        files = [member for member in selected if member.kind == "file"]
        if not files:
            raise FetchError(f"{archive}: no member matches {', '.join(patterns)}")
        total, budget = sum(member.size for member in files), total_budget(archive)
        if total > budget:
            raise FetchError(
                f"{archive}: the members needed would unpack to {total:,} bytes, over the {budget:,}-byte budget "
                "for an archive of this size; the archive is refused"
            )
        written = []
        for member in files:
            target = destination.joinpath(*PurePosixPath(member.name).parts)
            if not target.resolve().is_relative_to(destination.resolve()):
                raise FetchError(f"{archive}: member {member.name!r} would be written outside {destination}")
            written.append(target)
            if target.is_file() and target.stat().st_size == member.size:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary = target.with_name(target.name + ".extracting")
            with reader(member.raw or member.name) as origin, temporary.open("wb") as sink:
                copied = 0
                while block := origin.read(CHUNK):
                    copied += len(block)
                    if copied > member.size:
                        raise FetchError(f"{archive}: member {member.name!r} is larger than its header says")
                    sink.write(block)
            os.replace(temporary, target)
        return written


@contextmanager
def _opened(archive: Path) -> Iterator[tuple[list[Member], Callable[[str], IO[bytes]]]]:
    try:
        with _opened_archive(archive) as opened:
            yield opened
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as error:
        raise FetchError(f"{archive}: a damaged archive ({error}); delete it and fetch again") from None


@contextmanager
def _opened_archive(archive: Path) -> Iterator[tuple[list[Member], Callable[[str], IO[bytes]]]]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zipped:
            yield [_zip_member(archive, zipped, info) for info in zipped.infolist()], zipped.open
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tarred:
            infos = {info.name: info for info in tarred.getmembers()}
            members = [_tar_member(archive, info) for info in infos.values()]

            def reader(name: str) -> IO[bytes]:
                handle = tarred.extractfile(infos[name])
                if handle is None:
                    raise FetchError(f"{archive}: member {name!r} is not a regular file")
                return handle

            yield members, reader
    else:
        raise FetchError(f"{archive}: not a zip or tar archive")


def _checked_name(archive: Path, name: str) -> str:
    path = PurePosixPath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or path.is_absolute() or (path.parts and ":" in path.parts[0]):
        raise FetchError(f"{archive}: member {name!r} has an absolute path; the archive is refused")
    if ".." in path.parts:
        raise FetchError(
            f"{archive}: member {name!r} leads outside the archive's folder ('..'); the archive is refused"
        )
    return str(path)


def _zip_member(archive: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo) -> Member:
    name = _checked_name(archive, info.filename)
    if stat.S_ISLNK(info.external_attr >> 16):
        if info.file_size > 4096:
            raise FetchError(f"{archive}: member {info.filename!r} is a link with a {info.file_size:,}-byte target")
        _check_link(archive, name, bundle.read(info).decode("utf-8", "replace"))
        return Member(name=name, size=0, kind="link", raw=info.filename)
    _check_size(archive, info.filename, info.file_size)
    return Member(name=name, size=info.file_size, kind="dir" if info.is_dir() else "file", raw=info.filename)


def _tar_member(archive: Path, info: tarfile.TarInfo) -> Member:
    name = _checked_name(archive, info.name)
    if info.issym():
        _check_link(archive, name, info.linkname)
        return Member(name=name, size=0, kind="link")
    if info.islnk():  # a hard link names another member, relative to the archive's root
        _checked_name(archive, info.linkname)
        return Member(name=name, size=0, kind="link")
    if not (info.isfile() or info.isdir()):
        raise FetchError(f"{archive}: member {info.name!r} is not a regular file or folder; the archive is refused")
    _check_size(archive, info.name, info.size)
    return Member(name=name, size=info.size, kind="dir" if info.isdir() else "file", raw=info.name)


def _check_link(archive: Path, name: str, target: str) -> None:
    """A symbolic link's target, relative to the link's folder, must stay inside the archive's folder."""
    if target.startswith(("/", "\\")):
        raise FetchError(f"{archive}: member {name!r} links to the absolute path {target!r}; the archive is refused")
    depth = len(PurePosixPath(name).parts) - 1
    for part in PurePosixPath(target.replace("\\", "/")).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            raise FetchError(
                f"{archive}: member {name!r} links outside the archive's folder ({target!r}); the archive is refused"
            )


def _check_size(archive: Path, name: str, size: int) -> None:
    if size > MAX_MEMBER_BYTES:
        raise FetchError(
            f"{archive}: member {name!r} is {size:,} bytes, over the {MAX_MEMBER_BYTES:,}-byte limit; the archive is refused"
        )
