"""Catalogue entries: what to download for one dataset, how to check it, and how to import it.

An entry is read from a plain dict (the built-in catalogue, or a JSON file given with
`--catalogue`); every field is checked here, and a bad one stops with its entry and field named.
The JSON shape is the dataclasses' own (docs/datasets.md §7)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from catalog.fetching.errors import FetchError

KINDS = ("benchmark", "meta-evaluation")
SCHEMES = ("http", "https", "file")
SHA256 = re.compile(r"[0-9a-f]{64}")
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
DERIVATIONS = ("pascal50s-references",)


@dataclass(frozen=True)
class SourceFile:
    """One file as its publisher serves it. `sha256`/`size` None: not pinned yet (fetching it needs
    `--accept-unverified`, and prints what it computed). `extract`: for an archive, the member
    patterns (fnmatch, full member paths) to unpack; None for a plain file."""

    name: str  # the name it is saved under in the entry's folder
    url: str
    size: int | None
    sha256: str | None
    provenance: str  # where the URL, size and checksum come from
    extract: tuple[str, ...] | None = None

    @property
    def verified(self) -> bool:
        return self.sha256 is not None


@dataclass(frozen=True)
class Derivation:
    """A file computed from a downloaded one (e.g. a MATLAB file converted to JSON), checked by sha256."""

    step: str
    source: str
    target: str
    sha256: str | None


@dataclass(frozen=True)
class ImportStep:
    format: str
    path: str  # a glob pattern inside the entry's folder that names exactly one file or folder
    slug: str
    split: str | None = None
    references_hidden: bool = False


@dataclass(frozen=True)
class MediaStep:
    """Media archives, unpacked into the entry folder's `media/`, which `media attach` then reads."""

    files: tuple[SourceFile, ...]

    @property
    def size(self) -> int | None:
        sizes = [source.size for source in self.files]
        return None if None in sizes else sum(size for size in sizes if size is not None)


@dataclass(frozen=True)
class Entry:
    name: str
    title: str
    kind: str
    licence: str
    homepage: str
    citation: str
    files: tuple[SourceFile, ...]
    import_step: ImportStep
    folder: str  # the entry's folder inside the downloads folder (entries may share one)
    derive: tuple[Derivation, ...] = ()
    media: MediaStep | None = None
    notes: str = ""

    @property
    def size(self) -> int | None:
        sizes = [source.size for source in self.files]
        return None if None in sizes else sum(size for size in sizes if size is not None)

    @property
    def verified(self) -> bool:
        return all(source.verified for source in self.files)


@dataclass
class _Reader:
    """Reads one entry's dict, naming the entry and field in every error."""

    where: str
    raw: dict = field(repr=False)

    def fail(self, key: str, message: str) -> FetchError:
        return FetchError(f"{self.where}: field '{key}': {message}")

    def text(self, key: str, *, required: bool = True, default: str = "") -> str:
        value = self.raw.get(key, None if required else default)
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(key, "expected a non-empty string")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise self.fail(key, "expected a non-empty string or null")
        return value

    def sub(self, key: str, index: int | None = None) -> _Reader:
        value = self.raw.get(key) if index is None else self.raw[key][index]
        where = f"{self.where}.{key}" if index is None else f"{self.where}.{key}[{index}]"
        if not isinstance(value, dict):
            raise FetchError(f"{where}: expected an object")
        return _Reader(where, value)

    def items(self, key: str, *, required: bool = True) -> list[_Reader]:
        value = self.raw.get(key, None if required else [])
        if not isinstance(value, list) or (required and not value):
            raise self.fail(key, "expected a non-empty list")
        return [self.sub(key, index) for index in range(len(value))]


def load_catalogue(path: Path) -> list[Entry]:
    """The entries of a JSON catalogue file: a list of entry objects (or `{"entries": [...]}`)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FetchError(f"{path}: catalogue file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FetchError(f"{path}: not a JSON catalogue ({error})") from None
    if isinstance(document, dict):
        document = document.get("entries")
    if not isinstance(document, list):
        raise FetchError(f"{path}: expected a list of entries (or an object with an 'entries' list)")
    return parse_entries(document, where=str(path))


def parse_entries(raw_entries: list, *, where: str) -> list[Entry]:
    entries = []
    for index, raw in enumerate(raw_entries):
        if not isinstance(raw, dict):
            raise FetchError(f"{where}[{index}]: expected an object")
        entries.append(parse_entry(_Reader(f"{where}[{index}] ({raw.get('name', '?')})", raw)))
    names = [entry.name for entry in entries]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise FetchError(f"{where}: entry names used twice: {', '.join(duplicates)}")
    return entries


def parse_entry(reader: _Reader) -> Entry:
    name = reader.text("name")
    if not NAME.fullmatch(name):
        raise reader.fail("name", f"{name!r} is not a lowercase name (letters, digits, '-')")
    kind = reader.text("kind")
    if kind not in KINDS:
        raise reader.fail("kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    folder = reader.text("folder", required=False, default=name)
    if not NAME.fullmatch(folder):
        raise reader.fail("folder", f"{folder!r} is not a lowercase name (letters, digits, '-')")
    files = tuple(_source_file(item) for item in reader.items("files"))
    _unique_names(reader, "files", [source.name for source in files])
    derive = tuple(_derivation(item) for item in reader.items("derive", required=False))
    media = _media(reader.sub("media")) if reader.raw.get("media") is not None else None
    return Entry(
        name=name,
        title=reader.text("title"),
        kind=kind,
        licence=reader.text("licence"),
        homepage=reader.text("homepage"),
        citation=reader.text("citation", required=False),
        files=files,
        import_step=_import_step(reader.sub("import")),
        folder=folder,
        derive=derive,
        media=media,
        notes=reader.text("notes", required=False),
    )


def _source_file(reader: _Reader) -> SourceFile:
    name = reader.text("name")
    if not FILE_NAME.fullmatch(name):
        raise reader.fail("name", f"{name!r} is not a plain file name")
    url = reader.text("url")
    if urlsplit(url).scheme not in SCHEMES:
        raise reader.fail("url", f"{url!r}: only {', '.join(SCHEMES)} URLs are fetched")
    size = reader.raw.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
        raise reader.fail("size", "expected a positive number of bytes, or null")
    sha256 = reader.optional_text("sha256")
    if sha256 is not None and not SHA256.fullmatch(sha256):
        raise reader.fail("sha256", "expected 64 lowercase hex digits, or null")
    extract = reader.raw.get("extract")
    if extract is not None and (
        not isinstance(extract, list) or not extract or not all(isinstance(p, str) and p for p in extract)
    ):
        raise reader.fail("extract", "expected a non-empty list of member patterns, or null")
    return SourceFile(
        name=name,
        url=url,
        size=size,
        sha256=sha256,
        provenance=reader.text("provenance"),
        extract=tuple(extract) if extract is not None else None,
    )


def _derivation(reader: _Reader) -> Derivation:
    step = reader.text("step")
    if step not in DERIVATIONS:
        raise reader.fail("step", f"{step!r} is not one of {', '.join(DERIVATIONS)}")
    sha256 = reader.optional_text("sha256")
    if sha256 is not None and not SHA256.fullmatch(sha256):
        raise reader.fail("sha256", "expected 64 lowercase hex digits, or null")
    source, target = reader.text("source"), reader.text("target")
    for key, value in (("source", source), ("target", target)):
        if not FILE_NAME.fullmatch(value):
            raise reader.fail(key, f"{value!r} is not a plain file name")
    return Derivation(step=step, source=source, target=target, sha256=sha256)


def _import_step(reader: _Reader) -> ImportStep:
    slug = reader.text("slug")
    if not NAME.fullmatch(slug):
        raise reader.fail("slug", f"{slug!r} is not a lowercase slug")
    references_hidden = reader.raw.get("references_hidden", False)
    if not isinstance(references_hidden, bool):
        raise reader.fail("references_hidden", "expected true or false")
    return ImportStep(
        format=reader.text("format"),
        path=_relative_pattern(reader, "path"),
        slug=slug,
        split=reader.optional_text("split"),
        references_hidden=references_hidden,
    )


def _media(reader: _Reader) -> MediaStep:
    files = tuple(_source_file(item) for item in reader.items("files"))
    _unique_names(reader, "files", [source.name for source in files])
    return MediaStep(files=files)


def _relative_pattern(reader: _Reader, key: str) -> str:
    value = reader.text(key)
    if value.startswith("/") or ".." in Path(value).parts:
        raise reader.fail(key, f"{value!r} must stay inside the entry's folder")
    return value


def _unique_names(reader: _Reader, key: str, names: list[str]) -> None:
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise reader.fail(key, f"file names used twice: {', '.join(duplicates)}")
