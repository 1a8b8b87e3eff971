"""Unpacking the members an entry needs from a zip or tar(.gz) archive, safely.

Every member is checked before anything is written, and one that breaks a rule refuses the whole
archive, naming the archive and the member: a name that is empty or only `.`, an absolute path, a
`..`, a control character (NUL included), a path component over `MAX_COMPONENT_BYTES` or a path over
`MAX_NAME_BYTES`, a device or FIFO, a link pointing outside the archive's folder (or with such a
target), and a member larger than `MAX_MEMBER_BYTES`. A folder named `.` (`./`, which `tar -C dir .`
writes first) is the archive's root and harmless: folders are never written as such. Links that stay
inside are never extracted (only regular files are). Files are written below the destination folder
only, each to a temporary name beside it first and renamed into place; a member that cannot be
written (a file where a folder is, a full disk) stops with the same kind of error and its temporary
file removed, so an extraction leaves no half-written file behind."""

from __future__ import annotations

import os
import re
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
# Below Linux's NAME_MAX (255 bytes, with room for the ".extracting" suffix) and far below PATH_MAX
# (4096, with room for the destination): longer names are never a dataset's, and would fail to write.
MAX_COMPONENT_BYTES = 200
MAX_NAME_BYTES = 1024
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
CHUNK = 1 << 20
TEMPORARY_SUFFIX = ".extracting"


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
            try:
                if not target.resolve().is_relative_to(destination.resolve()):
                    raise FetchError(
                        f"{archive}: member {_shown(member.name)} would be written outside {destination}; "
                        "the archive is refused"
                    )
                if not (target.is_file() and target.stat().st_size == member.size):
                    _write(archive, member, reader, target)
            except OSError as error:
                raise FetchError(
                    f"{archive}: member {_shown(member.name)} cannot be written to {target} "
                    f"({error.strerror or error}); nothing of it was kept"
                ) from None
            written.append(target)
        return written


def _write(archive: Path, member: Member, reader: Callable[[str], IO[bytes]], target: Path) -> None:
    """`member` written to `target` through a temporary file beside it, removed on any failure."""
    temporary = target.with_name(target.name + TEMPORARY_SUFFIX)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with reader(member.raw or member.name) as origin, temporary.open("wb") as sink:
            copied = 0
            while block := origin.read(CHUNK):
                copied += len(block)
                if copied > member.size:
                    raise FetchError(f"{archive}: member {_shown(member.name)} is larger than its header says")
                sink.write(block)
        os.replace(temporary, target)
    finally:
        if temporary.is_file() and not temporary.is_symlink():
            temporary.unlink()


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
                    raise FetchError(f"{archive}: member {_shown(name)} is not a regular file")
                return handle

            yield members, reader
    else:
        raise FetchError(f"{archive}: not a zip or tar archive")


def _checked_name(archive: Path, name: str, *, folder: bool = False) -> str:
    """The member's name normalised ("./a//b" and "a\\b" read "a/b"), or FetchError naming the rule
    it breaks. `folder`: a folder member, which may be the archive's root (`.`)."""
    refused = f"{archive}: member {_shown(name)}"
    if CONTROL.search(name):
        raise FetchError(f"{refused} has a control character (NUL, newline …) in its name; the archive is refused")
    path = PurePosixPath(name.replace("\\", "/"))
    if name.startswith(("/", "\\")) or path.is_absolute() or (path.parts and ":" in path.parts[0]):
        raise FetchError(f"{refused} has an absolute path; the archive is refused")
    if ".." in path.parts:
        raise FetchError(f"{refused} leads outside the archive's folder ('..'); the archive is refused")
    if not name or not (path.parts or folder):
        raise FetchError(f"{refused} has no name (empty or '.'); the archive is refused")
    try:
        encoded = os.fsencode(name)
    except UnicodeEncodeError:
        raise FetchError(f"{refused} is not a name this file system can store; the archive is refused") from None
    if len(encoded) > MAX_NAME_BYTES:
        raise FetchError(f"{refused} has a name over {MAX_NAME_BYTES:,} bytes; the archive is refused")
    if any(len(os.fsencode(part)) > MAX_COMPONENT_BYTES for part in path.parts):
        raise FetchError(f"{refused} has a path component over {MAX_COMPONENT_BYTES} bytes; the archive is refused")
    return str(path)


def _shown(name: str) -> str:
    """A member's name as an error shows it: quoted, control characters escaped, cut at 80 characters."""
    return repr(name if len(name) <= 80 else f"{name[:60]}…{name[-10:]}")


def _zip_member(archive: Path, bundle: zipfile.ZipFile, info: zipfile.ZipInfo) -> Member:
    name = _checked_name(archive, info.filename, folder=info.is_dir())
    if stat.S_ISLNK(info.external_attr >> 16):
        if info.file_size > 4096:
            raise FetchError(
                f"{archive}: member {_shown(info.filename)} is a link with a {info.file_size:,}-byte target"
            )
        _check_link(archive, name, bundle.read(info).decode("utf-8", "replace"))
        return Member(name=name, size=0, kind="link", raw=info.filename)
    _check_size(archive, info.filename, info.file_size)
    return Member(name=name, size=info.file_size, kind="dir" if info.is_dir() else "file", raw=info.filename)


def _tar_member(archive: Path, info: tarfile.TarInfo) -> Member:
    name = _checked_name(archive, info.name, folder=info.isdir())
    if info.issym():
        _check_link(archive, name, info.linkname)
        return Member(name=name, size=0, kind="link")
    if info.islnk():  # a hard link names another member, relative to the archive's root
        try:
            _checked_name(archive, info.linkname)
        except FetchError as error:
            raise FetchError(
                f"{archive}: member {_shown(info.name)} is a hard link to a refused name: {error}"
            ) from None
        return Member(name=name, size=0, kind="link")
    if not (info.isfile() or info.isdir()):
        raise FetchError(
            f"{archive}: member {_shown(info.name)} is not a regular file or folder; the archive is refused"
        )
    _check_size(archive, info.name, info.size)
    return Member(name=name, size=info.size, kind="dir" if info.isdir() else "file", raw=info.name)


def _check_link(archive: Path, name: str, target: str) -> None:
    """A symbolic link's target, relative to the link's folder, must stay inside the archive's folder."""
    if not target or CONTROL.search(target):
        raise FetchError(
            f"{archive}: member {_shown(name)} links to {_shown(target)}, an empty name or one with a control "
            "character; the archive is refused"
        )
    if target.startswith(("/", "\\")):
        raise FetchError(
            f"{archive}: member {_shown(name)} links to the absolute path {_shown(target)}; the archive is refused"
        )
    depth = len(PurePosixPath(name).parts) - 1
    for part in PurePosixPath(target.replace("\\", "/")).parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            raise FetchError(
                f"{archive}: member {_shown(name)} links outside the archive's folder ({_shown(target)}); "
                "the archive is refused"
            )


def _check_size(archive: Path, name: str, size: int) -> None:
    if size > MAX_MEMBER_BYTES:
        raise FetchError(
            f"{archive}: member {_shown(name)} is {size:,} bytes, over the {MAX_MEMBER_BYTES:,}-byte limit; the archive is refused"
        )
