"""Candidates to score: what a metric must score on a meta-evaluation dataset, for researchers who
score it offline and upload `(caption_id, score)` back (docs/datasets.md §5).

Only the dataset's own captions are offered (`Caption.objects.own()`): on a meta-evaluation dataset
those are the candidates people judged; a submission's captions are its owner's upload and never
part of it. Every row carries the item's references, except on a hidden test set
(`Dataset.references_hidden`), whose rows carry an empty list for everyone (reference-free metrics
only), decided here, once.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from catalog.models import Caption, Dataset, Judgment, PairJudgment
from plumbing.spreadsheets import spreadsheet_row

FORMATS = ("jsonl", "csv")
CONTENT_TYPES = {"jsonl": "application/x-ndjson; charset=utf-8", "csv": "text/csv; charset=utf-8"}
CSV_COLUMNS = ["caption_id", "candidate", "references", "image", "item", "system"]
KEY_SEPARATOR = "\x1f"  # ASCII unit separator: a control character no source id holds in practice

# The order rows are offered in, and the values each one is made from (one query, streamed).
_ORDER = ("item__external_id", "system__slug", "external_id")
_CHUNK = 2000


@dataclass(frozen=True)
class CandidateRow:
    caption_id: str  # caption_key(item, system, external id): stable across re-imports
    candidate: str
    references: list[str]
    image: str  # the media's name, or the item's external id when the item has no media
    item: str
    system: str

    def as_dict(self) -> dict:
        """The row as a JSON object, its keys in the download's order."""
        return {
            "caption_id": self.caption_id,
            "candidate": self.candidate,
            "references": self.references,
            "image": self.image,
            "item": self.item,
            "system": self.system,
        }


def caption_key(item_external_id: str, system_slug: str, caption_external_id: str) -> str:
    """A caption's id in the candidate downloads and in score uploads: "c" and the first 16 hex
    digits of the sha256 of its item's external id, its system's slug and its own external id,
    joined by the unit separator (\\x1f).

    Made from these three strings, which the source files name and which together identify a caption
    within its dataset (the database's unique constraint), never from a primary key: pks change when
    a dataset is deleted and imported again, these strings do not, so scores computed on yesterday's
    download still match today's captions. 64 bits make a collision among a dataset's captions
    negligible (about 1 in 10^10 for 50,000 captions); `caption_keys` checks anyway."""
    joined = KEY_SEPARATOR.join((item_external_id, system_slug, caption_external_id))
    return "c" + hashlib.sha256(joined.encode("utf-8")).hexdigest()[:16]


def is_meta_evaluation(dataset: Dataset) -> bool:
    """Whether the dataset holds human judgments of its captions: ratings or pair preferences."""
    return (
        Judgment.objects.own().filter(caption__item__dataset=dataset).exists()
        or PairJudgment.objects.filter(dataset=dataset).exists()
    )


def candidate_rows(dataset: Dataset) -> Iterator[CandidateRow]:
    """The dataset's own captions with their references and image, ordered by item external id,
    system slug and caption external id; one query, read in chunks."""
    rows = (
        Caption.objects.own()
        .filter(item__dataset=dataset)
        .order_by(*_ORDER)
        .values_list(
            *_ORDER,
            "text",
            "item__external_id" if dataset.references_hidden else "item__references",
            "item__media__name",
        )
    )
    for item, system, external_id, text, references, media in rows.iterator(chunk_size=_CHUNK):
        yield CandidateRow(
            caption_id=caption_key(item, system, external_id),
            candidate=text,
            references=[] if dataset.references_hidden else list(references or []),
            image=media or item,
            item=item,
            system=system,
        )


def caption_keys(dataset: Dataset) -> dict[str, int]:
    """caption_key -> Caption pk for the captions `candidate_rows` offers (a score upload's check)."""
    keys: dict[str, int] = {}
    count = 0
    rows = Caption.objects.own().filter(item__dataset=dataset).values_list("pk", *_ORDER)
    for pk, item, system, external_id in rows.iterator(chunk_size=_CHUNK):
        keys[caption_key(item, system, external_id)] = pk
        count += 1
    if len(keys) != count:  # two captions of one dataset under one key: never seen, but say so
        raise RuntimeError(f"{dataset.slug}: {count - len(keys)} caption keys collide")
    return keys


def candidate_lines(dataset: Dataset, format: str) -> Iterator[str]:
    """The candidates as text lines of `format` ("jsonl" or "csv"), each ending with its newline.

    JSONL: one object a line, keys caption_id, candidate, references, image, item, system; texts as
    stored. CSV: a header, then one row a caption, `references` a JSON array in its cell; every text
    cell goes through `spreadsheet_row`, so a candidate that begins with = + - @ gets a leading `'`
    (JSONL carries the exact text)."""
    if format == "jsonl":
        for row in candidate_rows(dataset):
            yield json.dumps(row.as_dict(), ensure_ascii=False) + "\n"
    elif format == "csv":
        line = _Line()
        writer = csv.writer(line)
        yield writer.writerow(CSV_COLUMNS)
        for row in candidate_rows(dataset):
            references = json.dumps(row.references, ensure_ascii=False)
            yield writer.writerow(
                spreadsheet_row([row.caption_id, row.candidate, references, row.image, row.item, row.system])
            )
    else:
        raise ValueError(f"unknown candidates format {format!r} (one of {', '.join(FORMATS)})")


class _Line:
    """A csv.writer target that hands each written row back as its text."""

    def write(self, value: str) -> str:
        return value
