"""One medium downloaded from its publisher's address, safely: only an http(s) URL on an allowed
host at its default port (the same rule as the pages' CSP, catalog/pictures.py), redirects only to
such URLs, at most CAPBENCH_MEDIA_MAX_BYTES, a short timeout, and an interrupted download resumed
from its part file (`Range`). The caller verifies and stores what arrives (docs/datasets.md §7.1)."""

from __future__ import annotations

import http.client
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from catalog.fetching.errors import FetchError

TIMEOUT = 20  # seconds without a byte
CHUNK = 1 << 16
USER_AGENT = "CapBench-media/1 (+docs/datasets.md)"


def fetch_to(url: str, part: Path, *, allowed: Callable[[str], bool], max_bytes: int, attempts: int = 1) -> int:
    """Append `url`'s bytes to `part` (resuming what it holds); its final size. FetchError when the
    address (or a redirect) is not allowed, the file is larger than `max_bytes`, or every attempt
    failed (the part file is kept for the next try)."""
    if not allowed(url):
        raise FetchError(f"{url}: not an address on an allowed image host (CAPBENCH_MEDIA_HOSTS)")
    opener = urllib.request.build_opener(_Redirects(allowed))
    problem = ""
    for _ in range(max(1, attempts)):
        try:
            return _once(opener, url, part, max_bytes)
        except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
            problem = f"the transfer failed ({error})"
        except urllib.error.HTTPError as error:
            if error.code < 500 and error.code not in (408, 429):
                raise FetchError(f"{url}: HTTP {error.code} {error.reason}") from None
            problem = f"HTTP {error.code} {error.reason}"
        except urllib.error.URLError as error:
            problem = f"cannot connect: {error.reason}"
    raise FetchError(f"{url}: {problem} ({part.name} is kept: the next fetch resumes from it)")


def _once(opener: urllib.request.OpenerDirector, url: str, part: Path, max_bytes: int) -> int:
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = opener.open(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:
            return offset  # the part file already holds the whole file
        raise
    with response:
        resumed = bool(offset) and response.status == 206
        size = offset if resumed else 0
        with part.open("ab" if resumed else "wb") as sink:
            while block := response.read(CHUNK):
                size += len(block)
                if size > max_bytes:
                    sink.close()
                    part.unlink(missing_ok=True)
                    raise FetchError(f"{url}: larger than {max_bytes:,} bytes (CAPBENCH_MEDIA_MAX_BYTES); not stored")
                sink.write(block)
    return size


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an address that is itself allowed."""

    def __init__(self, allowed: Callable[[str], bool]) -> None:
        self.allowed = allowed

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 (urllib's signature)
        if not self.allowed(newurl):
            raise FetchError(f"{req.full_url}: redirected to {newurl}, not an allowed image host")
        return super().redirect_request(req, fp, code, msg, headers, newurl)
