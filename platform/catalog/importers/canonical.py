"""CapBench's canonical JSON Lines format: what `datasets export` writes and `datasets import
canonical` reads back unchanged (see docs/canonical-format.md).

One JSON object per line, each with a "type". The first line is the dataset; systems and media
come before the items that use them, items before their captions, captions before their
judgments and pairs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from catalog.importers.bundle import (
    CaptionKey,
    CaptionRow,
    DatasetBundle,
    DatasetInfo,
    ItemRow,
    JudgmentRow,
    MediaRow,
    PairRow,
    SystemRow,
)
from catalog.importers.errors import ImportFormatError
from catalog.importers.sources import (
    json_lines,
    parse_float,
    parse_int,
    parse_text,
    parse_text_list,
    require_keys,
    require_object,
    source_file,
)

FORMAT = "canonical"
FORMAT_NAME = "capbench-canonical"
FORMAT_VERSION = 1
DEFAULT_FILE = "dataset.jsonl"
DEFAULT_MANIFEST = None
WINNERS = {"a", "b", "tie", ""}


def write(bundle: DatasetBundle, stream: IO[str]) -> int:
    """Write the bundle; returns the number of lines."""
    lines = bundle.content_lines()
    lines[0] = {
        "type": "dataset",
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "slug": bundle.info.slug,
        **{k: v for k, v in lines[0].items() if k != "type"},
    }
    for line in lines:
        stream.write(json.dumps(line, ensure_ascii=False, sort_keys=False))
        stream.write("\n")
    return len(lines)


class _Reader:
    def __init__(self, path: Path):
        self.path = path
        self.bundle: DatasetBundle | None = None
        self.items: set[str] = set()
        self.media: set[str] = set()
        self.systems: set[str] = set()
        self.captions: set[CaptionKey] = set()
        self.pairs: set[str] = set()

    def read(self) -> DatasetBundle:
        handlers: dict[str, Callable[[dict, int], None]] = {
            "system": self.system,
            "media": self.media_row,
            "item": self.item,
            "caption": self.caption,
            "judgment": self.judgment,
            "pair": self.pair,
        }
        for line, raw in json_lines(self.path):
            row = require_object(raw, path=self.path, line=line)
            kind = row.get("type")
            if self.bundle is None:
                if kind != "dataset":
                    raise ImportFormatError(self.path, line, "type", "the first line must be the dataset")
                self.dataset(row, line)
            elif kind in handlers:
                handlers[kind](row, line)
            else:
                raise ImportFormatError(self.path, line, "type", f"unknown row type {kind!r}")
        if self.bundle is None:
            raise ImportFormatError(self.path, None, None, "empty file: no dataset line")
        return self.bundle

    @property
    def started(self) -> DatasetBundle:
        """The bundle, for the rows after the dataset line (read() calls no handler before it)."""
        assert self.bundle is not None
        return self.bundle

    def text(self, row: dict, key: str, line: int, *, allow_empty: bool = False) -> str:
        value = row.get(key, "")
        if allow_empty and value == "":
            return ""
        return parse_text(value, path=self.path, line=line, field=key)

    def dataset(self, row: dict, line: int) -> None:
        if row.get("format") != FORMAT_NAME:
            raise ImportFormatError(self.path, line, "format", f"expected {FORMAT_NAME!r}")
        if row.get("format_version") != FORMAT_VERSION:
            raise ImportFormatError(
                self.path, line, "format_version", f"unsupported version {row.get('format_version')!r}"
            )
        require_keys(row, ["slug", "title"], path=self.path, line=line)
        known = {f.name for f in fields(DatasetInfo)}
        info = {key: value for key, value in row.items() if key in known}
        info["source_format"] = info.get("source_format") or FORMAT
        if row.get("kind", "rating") not in {"rating", "pairwise", "foil", "benchmark"}:
            raise ImportFormatError(self.path, line, "kind", "must be rating, pairwise, foil or benchmark")
        if row.get("modality", "image") not in {"image", "video"}:
            raise ImportFormatError(self.path, line, "modality", "must be image or video")
        self.bundle = DatasetBundle(info=DatasetInfo(**info))

    def system(self, row: dict, line: int) -> None:
        slug = self.text(row, "slug", line)
        self.unique(self.systems, slug, line, "slug")
        self.started.systems.append(
            SystemRow(
                slug=slug,
                name=self.text(row, "name", line),
                kind=row.get("kind", "model"),
                description=row.get("description", ""),
                is_baseline=bool(row.get("is_baseline", False)),
            )
        )

    def media_row(self, row: dict, line: int) -> None:
        name = self.text(row, "name", line)
        self.unique(self.media, name, line, "name")
        self.started.media.append(
            MediaRow(
                name=name,
                kind=row.get("kind", "image"),
                expected_md5=row.get("expected_md5", ""),
                manifest_path=row.get("manifest_path", ""),
                url=self.media_url(row, line),
            )
        )

    def media_url(self, row: dict, line: int) -> str:
        url = row.get("url", "")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or (url and (parts.scheme not in {"http", "https"} or not parts.hostname or len(url) > 500)):
            raise ImportFormatError(
                self.path, line, "url", f"expected an http(s) address of at most 500 characters, found {url!r:.80}"
            )
        return url

    def item(self, row: dict, line: int) -> None:
        external_id = self.text(row, "external_id", line)
        self.unique(self.items, external_id, line, "external_id")
        media = row.get("media")
        if media is not None and media not in self.media:
            raise ImportFormatError(self.path, line, "media", f"{media!r} is not declared above")
        references = parse_text_list(
            row.get("references", []), path=self.path, line=line, field="references", allow_empty=True
        )
        metadata = require_object(row.get("metadata", {}), path=self.path, line=line, field="metadata")
        self.started.items.append(
            ItemRow(external_id=external_id, media=media, references=references, metadata=metadata)
        )

    def caption_key(self, row: dict, line: int, *, item: str, caption_field: str, declared: bool) -> CaptionKey:
        if item not in self.items:
            raise ImportFormatError(self.path, line, "item", f"{item!r} is not declared above")
        system = self.text(row, "system", line)
        if system not in self.systems:
            raise ImportFormatError(self.path, line, "system", f"{system!r} is not declared above")
        key = CaptionKey(item=item, system=system, external_id=str(row.get(caption_field, "")))
        if declared and key not in self.captions:
            raise ImportFormatError(self.path, line, caption_field, "no such caption above")
        return key

    def caption(self, row: dict, line: int) -> None:
        key = self.caption_key(row, line, item=self.text(row, "item", line), caption_field="id", declared=False)
        self.unique(self.captions, key, line, "id")
        self.started.captions.append(CaptionRow(key=key, text=self.text(row, "text", line)))

    def judgment(self, row: dict, line: int) -> None:
        key = self.caption_key(row, line, item=self.text(row, "item", line), caption_field="caption", declared=True)
        detail = row.get("detail")
        if detail is not None:
            require_object(detail, path=self.path, line=line, field="detail")
        self.started.judgments.append(
            JudgmentRow(
                caption=key,
                dimension=self.text(row, "dimension", line),
                annotator=self.text(row, "annotator", line, allow_empty=True),
                value=parse_float(row.get("value"), path=self.path, line=line, field="value"),
                detail=detail,
            )
        )

    def pair(self, row: dict, line: int) -> None:
        external_id = self.text(row, "id", line)
        self.unique(self.pairs, external_id, line, "id")
        item = self.text(row, "item", line)
        sides = []
        for side in ("a", "b"):
            ref = require_object(row.get(side), path=self.path, line=line, field=side)
            sides.append(self.caption_key(ref, line, item=item, caption_field="caption", declared=True))
        winner = row.get("winner", "")
        if winner not in WINNERS:
            raise ImportFormatError(self.path, line, "winner", "must be 'a', 'b', 'tie' or ''")
        references = row.get("references")
        if references is not None:
            references = parse_text_list(references, path=self.path, line=line, field="references")
        self.started.pairs.append(
            PairRow(
                external_id=external_id,
                item=item,
                caption_a=sides[0],
                caption_b=sides[1],
                category=row.get("category", ""),
                winner=winner,
                votes_a=self.votes(row, "votes_a", line),
                votes_b=self.votes(row, "votes_b", line),
                references=references,
            )
        )

    def votes(self, row: dict, key: str, line: int) -> int | None:
        value = row.get(key)
        return None if value is None else parse_int(value, path=self.path, line=line, field=key, low=0)

    def unique(self, seen: set, key: object, line: int, field: str) -> None:
        if key in seen:
            raise ImportFormatError(self.path, line, field, f"{key!r} appears twice")
        seen.add(key)


def parse(path: Path) -> DatasetBundle:
    return _Reader(source_file(path, DEFAULT_FILE)).read()
