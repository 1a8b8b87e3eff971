"""Media by URL: a medium its publisher serves at `Media.url` is downloaded into the
content-addressed store the first time anything needs its file (catalog/fetching/by_url.py: allowed
hosts only, size-capped, resumed). The first download pins its sha256 and size; a later one (after
the stored copy was lost) must give the same bytes, and an image must be one Pillow reads, or
nothing is stored. One process fetches a medium at a time (a PostgreSQL advisory lock per medium);
the others skip it meanwhile (docs/datasets.md §7.1)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone

from catalog.fetching.by_url import fetch_to
from catalog.fetching.download import file_sha256
from catalog.fetching.errors import FetchError
from catalog.models import Dataset, Media
from catalog.pictures import url_allowed
from catalog.services.media import image_size, store_file

logger = logging.getLogger(__name__)
MEDIA_LOCK = 7_301  # the advisory lock space of "fetching medium <pk>"
WORKER_ATTEMPTS = 1  # a worker does not wait on a host that does not answer: the caption goes without
COMMAND_ATTEMPTS = 3


@dataclass
class UrlFetchOutcome:
    stored: list[str] = field(default_factory=list)
    already_stored: int = 0
    failed: list[str] = field(default_factory=list)  # "name: why"


@dataclass(frozen=True)
class _Arrived:
    path: Path
    sha256: str
    size: int
    width: int | None
    height: int | None


def media_to_fetch(dataset: Dataset) -> list[Media]:
    """The dataset's media with an address and no stored file, by name."""
    return list(Media.objects.filter(dataset=dataset, stored_path="").exclude(url="").order_by("name"))


def media_fetch(media: Media, *, attempts: int = COMMAND_ATTEMPTS) -> Media:
    """`media`'s file downloaded from its address and stored; FetchError (nothing stored) when it
    cannot be, or another process is fetching it right now."""
    with _fetch_locks([media.pk]) as mine:
        if media.pk not in mine:
            raise FetchError(f"{media.name}: another process is fetching it; try again shortly")
        media.refresh_from_db()
        if media.stored_path:
            return media
        return _recorded(media, _arrived(media, attempts=attempts))


def media_fetch_all(dataset: Dataset) -> UrlFetchOutcome:
    """Every medium of the dataset that has an address and no file (`datasets media fetch SLUG`);
    a part file left by an interrupted run is resumed."""
    outcome = UrlFetchOutcome(already_stored=Media.objects.filter(dataset=dataset).exclude(stored_path="").count())
    for media in media_to_fetch(dataset):
        try:
            media_fetch(media)
        except (FetchError, OSError) as error:
            outcome.failed.append(f"{media.name}: {error}")
            continue
        outcome.stored.append(media.name)
    return outcome


def media_fetch_for_work(media_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """For a worker about to score: each medium among `media_ids` that has an address and no stored
    file fetched (downloads a few at a time; the database is touched from this thread only);
    {id: (stored_path, sha256)} of those now stored. One that cannot be fetched now is logged and
    left out: its captions are scored as without media."""
    wanted = list(Media.objects.filter(Q(pk__in=list(media_ids)), stored_path="").exclude(url=""))
    if not wanted:
        return {}
    with _fetch_locks([media.pk for media in wanted]) as mine:
        mine_now = [media for media in wanted if media.pk in mine]

        def arrive(media: Media) -> _Arrived | None:
            try:
                return _arrived(media, attempts=WORKER_ATTEMPTS)
            except (FetchError, OSError) as error:
                logger.warning("media %s (%s) could not be fetched: %s", media.pk, media.url, error)
                return None

        with ThreadPoolExecutor(max_workers=min(8, max(1, len(mine_now))), thread_name_prefix="capbench-media") as pool:
            arrived = list(pool.map(arrive, mine_now))
        stored = [_recorded(media, got) for media, got in zip(mine_now, arrived, strict=True) if got is not None]
    return {media.pk: (media.stored_path, media.sha256) for media in stored if media.stored_path}


def _arrived(media: Media, *, attempts: int) -> _Arrived:
    """The file on this machine, checked (no database access: safe in a thread)."""
    if not media.url:
        raise FetchError(f"{media.name}: no address to fetch it from")
    folder = Path(settings.CAPBENCH_DOWNLOADS_DIR) / "media" / str(media.dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"{media.pk}.part"
    size = fetch_to(
        media.url, part, allowed=url_allowed, max_bytes=settings.CAPBENCH_MEDIA_MAX_BYTES, attempts=attempts
    )
    digest = file_sha256(part)
    if media.sha256 and digest != media.sha256:
        part.unlink()
        raise FetchError(
            f"{media.url}: checksum mismatch: its first fetch pinned sha256 {media.sha256}, now {digest}; not stored"
        )
    width, height = image_size(part) if media.kind == Media.Kind.IMAGE else (None, None)
    if media.kind == Media.Kind.IMAGE and width is None:
        part.unlink()
        raise FetchError(f"{media.url}: what arrived is not an image; not stored")
    final = folder / f"{media.pk}{_suffix(media.name)}"
    os.replace(part, final)
    return _Arrived(final, digest, size, width, height)


def _recorded(media: Media, got: _Arrived) -> Media:
    """The file moved into the store and the medium pointing at it, unless another process stored
    it meanwhile or it contradicts a pinned checksum."""
    stored = store_file(got.path, got.sha256)
    Media.objects.filter(Q(sha256="") | Q(sha256=got.sha256), pk=media.pk, stored_path="").update(
        sha256=got.sha256,
        size_bytes=got.size,
        stored_path=stored,
        attached_at=timezone.now(),
        width=got.width,
        height=got.height,
    )
    got.path.unlink(missing_ok=True)  # the store holds it now (a link or a copy)
    media.refresh_from_db()
    return media


@contextlib.contextmanager
def _fetch_locks(pks: list[int]) -> Iterator[set[int]]:
    """The media among `pks` this process may fetch now (session advisory locks, released at the end)."""
    mine: set[int] = set()
    with connection.cursor() as cursor:
        for pk in sorted(pks):
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [MEDIA_LOCK, pk])
            if cursor.fetchone()[0]:
                mine.add(pk)
    try:
        yield mine
    finally:
        with connection.cursor() as cursor:
            for pk in sorted(mine):
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [MEDIA_LOCK, pk])


def _suffix(name: str) -> str:
    suffix = Path(name).suffix.lower()
    return suffix if suffix.isascii() and suffix[1:].isalnum() and len(suffix) <= 6 else ""
