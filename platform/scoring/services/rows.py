"""A job's captions as `evaluation` rows: candidate, the item's references, the media file."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count
from django.db.models.expressions import RawSQL

from capbench import storage
from catalog.models import Caption, PairJudgment
from catalog.services.media_urls import media_fetch_for_work
from evaluation.metrics import CaptionRow
from scoring.models import INPUT_KEY_BYTES


@dataclass(frozen=True)
class JobRow:
    caption_id: int
    row: CaptionRow
    media_sha256: str


def caption_rows(caption_ids: Iterable[int], *, media: bool = True, by_url: bool = True) -> list[JobRow]:
    """In the order given; media is a path on this machine when the file is attached: the stored
    file, or this worker's cached copy of it when files live in an object store. `media=False`
    (text-only work) fetches nothing and leaves it None; `by_url=False` does not download media known
    only by their address (an estimate reads what is here)."""
    ids = list(caption_ids)
    found = {}
    # The ids as one array parameter: an `IN` list of 500 is 500 parameters to build and send.
    query = Caption.objects.filter(pk__in=RawSQL("SELECT unnest(%s::bigint[])", [ids])).values_list(
        "pk",
        "text",
        "item__references",
        "item__media__stored_path",
        "item__media__sha256",
        "item__media_id",
        "item__media__url",
    )
    queried = list(query)  # one round trip (a server-side cursor would take three, and its rows are all kept anyway)
    fetched = _by_url_fetched(queried) if media and by_url else [row[:5] for row in queried]
    wanted = {stored: sha or "" for _, _, _, stored, sha in fetched if stored} if media else {}
    paths = storage.local_copies(wanted)
    for pk, text, references, stored, sha in fetched:
        path = str(paths[stored]) if stored in paths else None
        found[pk] = JobRow(pk, CaptionRow(str(pk), text, tuple(references or ()), path), sha or "")
    missing = [pk for pk in ids if pk not in found]
    if missing:
        raise LookupError(f"{len(missing)} caption(s) of the job no longer exist (e.g. {missing[:3]})")
    return [found[pk] for pk in ids]


def _by_url_fetched(fetched: list[tuple]) -> list[tuple]:
    """(pk, text, references, stored_path, sha256) rows, a medium known only by its address fetched
    into the store first (catalog/services/media_urls.py: its sha256 pinned by the first fetch)."""
    by_url = {media_id for _, _, _, stored, _, media_id, url in fetched if media_id and not stored and url}
    now = media_fetch_for_work(by_url) if by_url else {}
    return [
        (pk, text, references, *now.get(media_id, (stored, sha)))
        for pk, text, references, stored, sha, media_id, _ in fetched
    ]


def caption_multiplicity(caption_ids: list[int]) -> list[int]:
    """How many rows each caption stands for in the published protocols: its judgments and pair
    appearances (Flickr8k scores every judgment row as its own "image"), at least one."""
    judged = dict(Caption.objects.filter(pk__in=caption_ids).annotate(n=Count("judgments")).values_list("pk", "n"))
    pairs: Counter[int] = Counter()
    for a, b in PairJudgment.objects.filter(caption_a__in=caption_ids).values_list("caption_a", "caption_b"):
        pairs[a] += 1
        pairs[b] += 1
    return [max(1, judged.get(pk, 0) + pairs.get(pk, 0)) for pk in caption_ids]


def input_key(config_hash: str, job_row: JobRow, context_key: str) -> bytes:
    """Identical work has an identical key: the same metric configuration, candidate, references,
    media content and corpus context give the same score, whichever caption asked. The first 16
    bytes of the SHA-256 (Score.input_key): 128 bits leave no chance of two inputs meeting."""
    payload = json.dumps(
        [config_hash, job_row.row.candidate, list(job_row.row.references), job_row.media_sha256, context_key],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).digest()[:INPUT_KEY_BYTES]


def context_key(config_hash: str, references: list[tuple[str, ...]], multiplicity: list[int]) -> str:
    """The identity of a corpus context: the multiset of reference lists (order-free)."""
    counts: Counter[tuple[str, ...]] = Counter()
    for refs, times in zip(references, multiplicity, strict=True):
        counts[refs] += times
    digest = hashlib.sha256(config_hash.encode())
    for refs, times in sorted(counts.items()):
        digest.update(json.dumps([list(refs), times], ensure_ascii=False).encode())
    return digest.hexdigest()
