"""The in-memory form of a dataset between parsing and storing."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field


def normalise_whitespace(text: str) -> str:
    """Collapse runs of whitespace; the reference protocols compare and store captions this way."""
    return " ".join(text.split())


@dataclass
class DatasetInfo:
    slug: str
    title: str
    source_format: str
    modality: str = "image"
    kind: str = "rating"
    dimensions: list[str] = field(default_factory=lambda: ["overall"])
    rating_scale: dict = field(default_factory=dict)
    description: str = ""
    citation: str = ""
    licence: str = ""
    url: str = ""
    protocol_version: str = "1"
    protocol_notes: str = ""


@dataclass
class SystemRow:
    slug: str
    name: str
    kind: str = "model"
    description: str = ""
    is_baseline: bool = False


@dataclass
class MediaRow:
    name: str
    kind: str = "image"
    expected_md5: str = ""
    manifest_path: str = ""
    url: str = ""  # where its publisher serves it (shown when no file is stored; fetched by workers)


@dataclass
class ItemRow:
    external_id: str
    media: str | None
    references: list[str]
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class CaptionKey:
    item: str
    system: str
    external_id: str = ""


@dataclass
class CaptionRow:
    key: CaptionKey
    text: str


@dataclass
class JudgmentRow:
    caption: CaptionKey
    dimension: str
    value: float
    annotator: str = ""
    detail: dict | None = None


@dataclass
class PairRow:
    external_id: str
    item: str
    caption_a: CaptionKey
    caption_b: CaptionKey
    category: str = ""
    winner: str = ""
    votes_a: int | None = None
    votes_b: int | None = None
    references: list[str] | None = None


@dataclass
class DatasetBundle:
    info: DatasetInfo
    systems: list[SystemRow] = field(default_factory=list)
    media: list[MediaRow] = field(default_factory=list)
    items: list[ItemRow] = field(default_factory=list)
    captions: list[CaptionRow] = field(default_factory=list)
    judgments: list[JudgmentRow] = field(default_factory=list)
    pairs: list[PairRow] = field(default_factory=list)
    # What the protocol removed or changed, for the import summary (not stored as content).
    report: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {
            "systems": len(self.systems),
            "media": len(self.media),
            "items": len(self.items),
            "captions": len(self.captions),
            "judgments": len(self.judgments),
            "pairs": len(self.pairs),
        }

    def content_lines(self) -> list[dict]:
        """Every content row as a plain dict, in a fixed order: the canonical form's body.

        The dataset's slug is not content: the same file imported under two slugs has the same
        fingerprint.
        """
        info = asdict(self.info)
        info.pop("slug")
        lines: list[dict] = [{"type": "dataset", **info}]
        lines += [{"type": "system", **asdict(row)} for row in sorted(self.systems, key=_by_slug)]
        lines += [{"type": "media", **asdict(row)} for row in sorted(self.media, key=_by_name)]
        lines += [{"type": "item", **asdict(row)} for row in self.items]
        lines += [{"type": "caption", **_caption_dict(row)} for row in self.captions]
        lines += [{"type": "judgment", **_judgment_dict(row)} for row in self.judgments]
        lines += [{"type": "pair", **_pair_dict(row)} for row in self.pairs]
        return lines

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for line in self.content_lines():
            digest.update(json.dumps(line, sort_keys=True, ensure_ascii=False).encode())
            digest.update(b"\n")
        return digest.hexdigest()


def _by_slug(row: SystemRow) -> str:
    return row.slug


def _by_name(row: MediaRow) -> str:
    return row.name


def _caption_dict(row: CaptionRow) -> dict:
    return {"item": row.key.item, "system": row.key.system, "id": row.key.external_id, "text": row.text}


def _judgment_dict(row: JudgmentRow) -> dict:
    return {
        "item": row.caption.item,
        "system": row.caption.system,
        "caption": row.caption.external_id,
        "dimension": row.dimension,
        "annotator": row.annotator,
        "value": row.value,
        "detail": row.detail,
    }


def _pair_dict(row: PairRow) -> dict:
    return {
        "id": row.external_id,
        "item": row.item,
        "a": {"system": row.caption_a.system, "caption": row.caption_a.external_id},
        "b": {"system": row.caption_b.system, "caption": row.caption_b.external_id},
        "category": row.category,
        "winner": row.winner,
        "votes_a": row.votes_a,
        "votes_b": row.votes_b,
        "references": row.references,
    }
