"""Media by URL: a medium its publisher serves at `Media.url` is downloaded (resumed, retried) into
the content-addressed store the first time anything needs the file. The first fetch pins its
sha256 (and size); every later fetch of it must give the same bytes, or nothing is stored
(docs/datasets.md, media by URL)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from catalog.fetching.download import Downloaded, download
from catalog.fetching.entries import SourceFile
from catalog.fetching.errors import FetchError
from catalog.models import Dataset, Media
from catalog.services.media import image_size, store_file

logger = logging.getLogger(__name__)


@dataclass
class UrlFetchOutcome:
    stored: list[str] = field(default_factory=list)
    already_stored: int = 0
    failed: list[str] = field(default_factory=list)  # "name: why"


def media_to_fetch(dataset: Dataset) -> list[Media]:
    """The dataset's media with an address and no stored file, by name."""
    return list(Media.objects.filter(dataset=dataset, stored_path="").exclude(url="").order_by("name"))


def media_fetch(
    media: Media, *, folder: Path | None = None, progress=None, say: Callable[[str], None] = lambda line: None
) -> Media:
    """`media`'s file downloaded from its URL and stored; raises FetchError (nothing stored) when
    the download fails or its bytes differ from the sha256 pinned by an earlier fetch."""
    return _recorded(media, _downloaded(media, folder=folder, progress=progress, say=say))


def _downloaded(
    media: Media, *, folder: Path | None = None, progress=None, say: Callable[[str], None] = lambda line: None
) -> Downloaded:
    """The file on this machine, checked against the pinned sha256 (no database access: safe in a thread)."""
    if not media.url:
        raise FetchError(f"{media.name}: no address to fetch it from")
    folder = folder or Path(settings.CAPBENCH_DOWNLOADS_DIR) / "media" / str(media.dataset_id)
    source = SourceFile(
        name=_local_name(media),
        url=media.url,
        size=media.size_bytes if media.sha256 else None,
        sha256=media.sha256 or None,
        provenance="pinned by its first fetch" if media.sha256 else "its first fetch",
    )
    return download(source, folder, accept_unverified=not media.sha256, progress=progress, say=say)


def _recorded(media: Media, got: Downloaded) -> Media:
    """The downloaded file moved into the store and the medium's row pointing at it (sha256 pinned)."""
    stored = store_file(got.path, got.sha256)
    width, height = image_size(got.path) if media.kind == Media.Kind.IMAGE else (None, None)
    Media.objects.filter(pk=media.pk).update(
        sha256=got.sha256,
        size_bytes=got.size,
        stored_path=stored,
        attached_at=timezone.now(),
        width=width,
        height=height,
    )
    got.path.unlink(missing_ok=True)  # the store holds it now (a link or a copy)
    media.refresh_from_db()
    return media


def media_fetch_all(
    dataset: Dataset, *, progress=None, say: Callable[[str], None] = lambda line: None
) -> UrlFetchOutcome:
    """Every medium of the dataset that has an address and no file (`datasets media fetch SLUG`);
    a part file left by an interrupted run is resumed."""
    outcome = UrlFetchOutcome(already_stored=Media.objects.filter(dataset=dataset).exclude(stored_path="").count())
    for media in media_to_fetch(dataset):
        try:
            media_fetch(media, progress=progress, say=say)
        except (FetchError, OSError) as error:
            outcome.failed.append(f"{media.name}: {error}")
            continue
        outcome.stored.append(media.name)
    return outcome


def media_fetch_for_work(media_ids: Iterable[int]) -> dict[int, tuple[str, str]]:
    """For a worker about to score: each medium among `media_ids` that has an address and no stored
    file fetched (a few at a time); {id: (stored_path, sha256)} of those now stored. One that cannot
    be fetched is logged and left out: its captions are scored as without media."""
    wanted = list(Media.objects.filter(Q(pk__in=list(media_ids)), stored_path="").exclude(url=""))
    if not wanted:
        return {}

    def fetch(media: Media) -> Downloaded | None:
        try:
            return _downloaded(media)
        except (FetchError, OSError) as error:
            logger.warning("media %s (%s) could not be fetched: %s", media.pk, media.url, error)
            return None

    with ThreadPoolExecutor(max_workers=min(8, len(wanted)), thread_name_prefix="capbench-media") as pool:
        got = list(pool.map(fetch, wanted))
    fetched = [_recorded(media, file) for media, file in zip(wanted, got, strict=True) if file is not None]
    return {media.pk: (media.stored_path, media.sha256) for media in fetched}


def _local_name(media: Media) -> str:
    suffix = Path(media.name).suffix.lower()
    return f"{media.pk}{suffix if suffix.isascii() and len(suffix) <= 6 else ''}"
