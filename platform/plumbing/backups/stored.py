"""The file store as a backup sees it (plumbing/storage.py): where a local one lies, what it is
called in the manifest, the name of every file in it and the size of one open file."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from django.core.files.storage import FileSystemStorage

from plumbing import storage


def local_root() -> Path | None:
    found = storage.store()
    return Path(found.location) if isinstance(found, FileSystemStorage) else None


def description() -> str:
    root = local_root()
    if root is not None:
        return "local folder"
    bucket = getattr(storage.store(), "bucket_name", "")
    return f"bucket {bucket}" if bucket else type(storage.store()).__name__


def opened_size(handle: IO[bytes], name: str) -> int:
    """The size of the stored file open in `handle` (a local file's own, which no removal changes)."""
    try:
        return os.fstat(handle.fileno()).st_size
    except (AttributeError, OSError, io.UnsupportedOperation):
        return storage.store().size(name)


def names() -> Iterator[str]:
    """The name of every file in the store, sorted; partial files and uploads still arriving
    (names starting with a dot, plumbing/storage.py) left out."""
    root = local_root()
    if root is not None:
        if not root.is_dir():
            return
        found: list[str] = []
        for folder, folders, files in os.walk(root):
            folders[:] = [name for name in folders if not name.startswith(".")]
            found.extend(Path(folder, name).relative_to(root).as_posix() for name in files if not name.startswith("."))
        yield from sorted(found)
        return
    store = storage.store()

    def walk(prefix: str) -> Iterator[str]:
        folders, files = store.listdir(prefix)
        for name in sorted(files):
            if not name.startswith("."):
                yield prefix + name
        for folder in sorted(folders):
            if not folder.startswith("."):
                yield from walk(f"{prefix}{folder}/")

    yield from walk("")
