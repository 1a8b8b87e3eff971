"""What a page shows for a medium: the stored file when present, else the publisher's URL when its
host is one the site allows (CAPBENCH_MEDIA_HOSTS, the same list as the CSP's img-src), else
nothing. One rule for every page that shows a picture (docs/datasets.md, media by URL)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.db.models import Q
from django.urls import reverse

from catalog.models import Media


@dataclass(frozen=True)
class Picture:
    src: str
    kind: str  # image | video
    width: int | None
    height: int | None
    remote: bool  # served by its publisher, not by this site


def media_hosts() -> tuple[str, ...]:
    return tuple(settings.CAPBENCH_MEDIA_HOSTS)


def url_allowed(url: str) -> bool:
    """An http(s) URL on one of the allowed hosts: an entry `host` allows it at its scheme's default
    port, `host:port` at that port (no wildcards) — what the CSP's `img-src` (scheme://entry) lets a
    browser load, and all a worker downloads."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    host = parts.hostname or ""
    return parts.scheme in {"http", "https"} and (host if port is None else f"{host}:{port}") in media_hosts()


def picture_of(media: Media | None) -> Picture | None:
    if media is None:
        return None
    if media.stored_path:
        src = reverse("catalog:media-file", args=[media.pk])
        return Picture(src, media.kind, media.width, media.height, remote=False)
    if media.url and media.kind == Media.Kind.IMAGE and url_allowed(media.url):  # the CSP allows remote images only
        return Picture(media.url, media.kind, media.width, media.height, remote=True)
    return None


def is_showable(media: Media | None) -> bool:
    return picture_of(media) is not None


def showable_q(to_media: str = "") -> Q:
    """The media `picture_of` shows, as a filter (`to_media`: the path to Media, e.g. "item__media__")."""
    hosts = "|".join(re.escape(host) for host in media_hosts())
    by_url = (
        Q(**{f"{to_media}url__iregex": rf"^https?://({hosts})/", f"{to_media}kind": Media.Kind.IMAGE})
        if hosts
        else Q(pk__in=[])
    )
    return ~Q(**{f"{to_media}stored_path": ""}) | by_url
