"""A job's captions as `evaluation` rows: candidate, the item's references, the media file."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count
from django.db.models.expressions import RawSQL

from capbench_eval.metaeval.protocols import CORPUS_DATASET, CORPUS_ROWS, CORPUS_SYSTEM
from capbench_eval.metrics import CaptionRow
from catalog.models import Caption, Judgment, PairJudgment
from catalog.services.media_urls import media_fetch_for_work
from plumbing import storage
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


def caption_corpora(caption_ids: list[int], corpus: str) -> list[tuple[str, int]]:
    """Per caption, the corpus it is scored in and how many documents it is there
    (capbench_eval.metaeval.protocols, CORPORA; docs/metaeval.md §7.7): under CORPUS_SYSTEM its
    system's corpus (the part named by the system's id), once; under CORPUS_DATASET the one corpus,
    once; under CORPUS_ROWS the one corpus, once per row it stands for in the protocol: its imported
    judgments of one dimension (the most any dimension has: the number of rating dimensions never
    multiplies it) and its pair appearances, at least one."""
    if corpus == CORPUS_SYSTEM:
        systems = dict(Caption.objects.filter(pk__in=caption_ids).values_list("pk", "system_id"))
        return [(str(systems.get(pk) or ""), 1) for pk in caption_ids]
    if corpus == CORPUS_DATASET:
        return [("", 1)] * len(caption_ids)
    if corpus != CORPUS_ROWS:
        raise ValueError(f"no corpus rule {corpus!r}")
    rows: Counter[int] = Counter()
    per_dimension = (
        Judgment.objects.filter(caption_id__in=caption_ids)
        .values_list("caption_id", "dimension")
        .annotate(n=Count("id"))
        .values_list("caption_id", "n")
    )
    for caption_id, count in per_dimension:
        rows[caption_id] = max(rows[caption_id], count)
    for a, b in PairJudgment.objects.filter(caption_a__in=caption_ids).values_list("caption_a", "caption_b"):
        rows[a] += 1
        rows[b] += 1
    return [("", max(1, rows.get(pk, 0))) for pk in caption_ids]


def corpus_parts(job_rows: list[JobRow], corpora: list[tuple[str, int]]) -> dict[str, list[CaptionRow]]:
    """The rows of each corpus part, each repeated as many times as it counts there."""
    parts: dict[str, list[CaptionRow]] = {}
    for job_row, (part, times) in zip(job_rows, corpora, strict=True):
        parts.setdefault(part, []).extend([job_row.row] * times)
    return parts


def input_key(config_hash: str, job_row: JobRow, context_key: str) -> bytes:
    """Identical work has an identical key: the same metric configuration, candidate, references,
    media content and corpus context give the same score, whichever caption asked. The first 16
    bytes of the SHA-256 (Score.input_key): 128 bits leave no chance of two inputs meeting."""
    payload = json.dumps(
        [config_hash, job_row.row.candidate, list(job_row.row.references), job_row.media_sha256, context_key],
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).digest()[:INPUT_KEY_BYTES]


KEY_LENGTH = 64  # EvaluationJob.context_key, CorpusContext.key


def context_key(config_hash: str, rule: str, references: list[tuple[str, ...]], corpora: list[tuple[str, int]]) -> str:
    """The identity of a corpus context: the corpus rule it was planned under (CORPORA; "+parts"
    when its corpus has several parts), then a digest of the multiset of reference lists
    (order-free). One part (every submission) is keyed by its rule and content: two submissions of
    the same captions share their context and their scores. Several parts (a dataset's systems) are
    named in the digest too: the stored context holds one context per part name."""
    parts: dict[str, Counter[tuple[str, ...]]] = {}
    for refs, (part, times) in zip(references, corpora, strict=True):
        parts.setdefault(part, Counter())[refs] += times
    if len(parts) == 1:
        prefix, digest = rule, _part_key(config_hash, next(iter(parts.values())))
    else:
        keys = sorted([part, _part_key(config_hash, counts)] for part, counts in parts.items())
        prefix, digest = f"{rule}+parts", hashlib.sha256(json.dumps([config_hash, keys]).encode()).hexdigest()
    return f"{prefix}:{digest}"[:KEY_LENGTH]


def context_rule(key: str) -> tuple[str, bool] | None:
    """The corpus rule a context key was planned under and whether its corpus has several parts;
    None for a key from before keys named their rule (one part, scored as the job's rows)."""
    prefix, named, _ = key.partition(":")
    if not named:
        return None
    rule, _, parted = prefix.partition("+")
    return rule, bool(parted)


def _part_key(config_hash: str, counts: Counter[tuple[str, ...]]) -> str:
    digest = hashlib.sha256(config_hash.encode())
    for refs, times in sorted(counts.items()):
        digest.update(json.dumps([list(refs), times], ensure_ascii=False).encode())
    return digest.hexdigest()
