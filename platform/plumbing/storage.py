"""The file store: every file that another process, perhaps on another machine, must read.

Dataset media, uploaded submission files and pictures a cycle metric generated go through Django's
storage API (the ``default`` storage, configured in settings), under content-addressed names:

- ``<sha256[:2]>/<sha256><ext>``: an attached image or video (``Media.stored_path``);
- ``submissions/<sha256[:2]>/<sha256>-<random>.<format>``: an upload as received;
- ``generated/<key[:2]>/<key>.png``: a generated picture, by its generation key.

By default the storage is the local folder MEDIA_ROOT (``make run``); with ``CAPBENCH_S3_BUCKET``
set it is an S3-compatible object store (django-storages), and web servers and workers on several
machines share nothing but it, PostgreSQL and Redis (docs/deploy.md).

A worker never opens a stored file by a path on another machine's disk: ``local_copy`` gives it a
path on its own, the stored file itself when the storage is a local folder, else a copy in its
read cache (``CAPBENCH_FILE_CACHE``). Names are content addresses, so a cached copy never goes stale.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

from django.conf import settings
from django.core.files import File
from django.core.files.storage import FileSystemStorage, Storage, storages

from capbench_eval.files import atomic_path

CHUNK = 1 << 20


class ContentAddressedFileSystemStorage(FileSystemStorage):
    """A local folder where a name is its content's address: saving a name that exists keeps it
    (same name, same content), and a file appears under its name whole or not at all (written under
    a temporary name and renamed), so a crash never leaves a partial file to be served."""

    def get_available_name(self, name: str, max_length: int | None = None) -> str:
        return name

    def _save(self, name: str, content: File) -> str:
        target = Path(self.path(name))
        if target.exists():
            return name
        with atomic_path(target) as partial, partial.open("wb") as out:
            for chunk in content.chunks(CHUNK):
                out.write(chunk)
        return name


def store() -> Storage:
    return storages["default"]


def _local_root() -> Path | None:
    """The folder behind the storage when it is one on this machine (None for an object store)."""
    storage = store()
    return Path(storage.location) if isinstance(storage, FileSystemStorage) else None


def put_path(name: str, path: Path, *, move: bool = False) -> str:
    """Store the file at `path` under `name` (kept as it is when the name exists). A local folder
    gets a hard link, or the file itself when `move`, else a copy; an object store an upload."""
    root = _local_root()
    if root is None:
        if not store().exists(name):
            with path.open("rb") as handle:
                store().save(name, File(handle, name=name))
        if move:
            path.unlink(missing_ok=True)
        return name
    target = root / name
    if target.exists():
        if move:
            path.unlink(missing_ok=True)
        return name
    target.parent.mkdir(parents=True, exist_ok=True)
    if move:
        os.replace(path, target)
        return name
    with atomic_path(target) as partial:
        try:
            os.link(path, partial)
        except OSError:
            shutil.copyfile(path, partial)
    return name


def upload_folder(root: Path) -> tuple[int, int]:
    """Every file of a local store's folder (an install's MEDIA_ROOT, moving to an object store) copied
    into the configured store under the same name: (stored now, there already). Names are content
    addresses, so running it again, or after a crash, only adds what is missing. Skipped: uploads
    still arriving (`submissions/.incoming/`) and partial files (names starting with a dot)."""
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: no such folder")
    stored = there = 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        name = relative.as_posix()
        if exists(name):
            there += 1
            continue
        put_path(name, path)
        stored += 1
    return stored, there


def open_stored(name: str) -> IO[bytes]:
    """The stored file for reading (a view streams it); FileNotFoundError when it is not there."""
    if not store().exists(name):
        raise FileNotFoundError(name)
    return store().open(name, "rb")


def exists(name: str) -> bool:
    return store().exists(name)


def delete(name: str) -> None:
    store().delete(name)


def cache_dir() -> Path:
    return Path(settings.CAPBENCH_FILE_CACHE)


def local_copy(name: str, sha256: str = "") -> Path:
    """A path on this machine holding the stored file `name`: the file itself in a local folder,
    else a copy in this machine's read cache, downloaded once (checked against `sha256` when given;
    a copy that does not match is refused, not kept)."""
    root = _local_root()
    if root is not None:
        return root / name
    cached = cache_dir() / name
    if cached.is_file():
        return cached
    digest = hashlib.sha256()
    with atomic_path(cached) as partial:
        with store().open(name, "rb") as source, partial.open("wb") as out:
            for chunk in source.chunks(CHUNK):
                digest.update(chunk)
                out.write(chunk)
        if sha256 and digest.hexdigest() != sha256:
            raise OSError(f"the stored file {name} has sha256 {digest.hexdigest()}, not {sha256}")
    return cached


def local_copies(names: dict[str, str]) -> dict[str, Path]:
    """`local_copy` for many files ({name: sha256}), fetched a few at a time from an object store."""
    if _local_root() is not None or len(names) < 2:
        return {name: local_copy(name, sha256) for name, sha256 in names.items()}
    with ThreadPoolExecutor(max_workers=8, thread_name_prefix="capbench-fetch") as pool:
        copies = pool.map(lambda item: local_copy(*item), names.items())
        return dict(zip(names, copies, strict=True))
