"""Downloading one catalogue file: stream to `NAME.part`, resume from its size, verify size and
sha256, then rename into place atomically.

A resumed HTTP download asks for `Range: bytes=N-` and appends only on a 206 answer whose range
starts at N; a 200 answer means the server sends the whole file, so the part file starts over.
A `file://` URL is read from the offset directly. Transient failures (timeouts, resets, 5xx, 429)
are retried with growing pauses, each retry resuming where the last one stopped. A verified file
gets a `NAME.sha256` stamp beside it (`sha256  size`), so a later fetch knows it without reading it
again; a file whose stamp is missing or stale is hashed once more.

A file the catalogue gives no size for is capped at `CAPBENCH_FETCH_MAX_BYTES`: a server that
declares more (`Content-Length`) is refused before a byte is read, and a transfer that passes it
(no `Content-Length`, or a wrong one) is cut off; either way the part file is removed."""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TextIO
from urllib.parse import unquote, urlsplit

from django.conf import settings

from catalog.fetching.entries import SourceFile
from catalog.fetching.errors import FetchError
from catalog.fetching.progress import Progress

CHUNK = 1 << 20
TIMEOUT = 60  # seconds without a byte before a connection counts as failed
RETRY_DELAYS = (2, 5, 15, 30, 60)  # pauses before each retry of a transient failure
RETRIED_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
USER_AGENT = "CapBench-datasets-fetch/1 (+docs/datasets.md)"
sleep: Callable[[float], None] = time.sleep  # replaced in tests


@dataclass
class Downloaded:
    path: Path
    sha256: str
    size: int
    received: int  # bytes read from the source this time (0: the file was already here)
    resumed_from: int  # bytes of an earlier part file kept
    verified: bool  # the catalogue's sha256 matched (False: it has none)

    @property
    def already_present(self) -> bool:
        return self.received == 0 and self.resumed_from == 0


class _Transient(Exception):
    """A failure worth retrying (network trouble, a busy server)."""


@dataclass(frozen=True)
class _Limit:
    """The most a download may bring: the catalogue's size, else the configured cap (`capped`)."""

    source: SourceFile
    cap: int

    @property
    def capped(self) -> bool:
        return self.source.size is None

    @property
    def bytes(self) -> int:
        return self.cap if self.source.size is None else self.source.size

    def exceeded(self, declared: int | None = None) -> FetchError:
        if not self.capped:
            what = "arrived" if declared is None else f"are declared by the server ({declared:,})"
            return FetchError(
                f"{self.source.url}: more than the catalogue's {self.bytes:,} bytes {what}; the part file was removed"
            )
        cap = f"the {self.bytes:,}-byte cap (CAPBENCH_FETCH_MAX_BYTES)"
        what = f"more than {cap} arrived" if declared is None else f"the server declares {declared:,} bytes, over {cap}"
        return FetchError(
            f"{self.source.url}: the catalogue gives no size for {self.source.name}, and {what}; nothing of it "
            "was kept. Raise the cap, or give the file's size and sha256 in the catalogue"
        )


def stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def part_path(path: Path) -> Path:
    return path.with_name(path.name + ".part")


def present(source: SourceFile, folder: Path) -> str | None:
    """The sha256 of the file already downloaded and checked into `folder`, from its stamp; None
    when it is absent, unstamped or does not match the catalogue (a fetch will look again)."""
    path = folder / source.name
    stamp = _read_stamp(path)
    if stamp is None or not path.is_file() or path.stat().st_size != stamp[1]:
        return None
    if source.sha256 is not None and stamp[0] != source.sha256:
        return None
    return stamp[0]


def download(
    source: SourceFile,
    folder: Path,
    *,
    accept_unverified: bool = False,
    max_bytes: int | None = None,
    progress: TextIO | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Downloaded:
    """`source` saved and checked as `folder / source.name`; nothing is read when it is already there.
    `max_bytes` (default CAPBENCH_FETCH_MAX_BYTES) caps a source whose size the catalogue does not give."""
    if source.sha256 is None and not accept_unverified:
        raise FetchError(
            f"{source.name}: the catalogue has no sha256 for {source.url} ({source.provenance}); "
            "nothing can check what arrives. Pass --accept-unverified to download it anyway: the "
            "sha256 it computes is printed so that the catalogue can be completed"
        )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    known = _already_here(source, target, say)
    if known is not None:
        return known
    part = part_path(target)
    if part.exists() and source.size is not None and part.stat().st_size > source.size:
        say(f"{part.name}: larger than the catalogue's {source.size:,} bytes, starting over")
        part.unlink()
    limit = _Limit(source, settings.CAPBENCH_FETCH_MAX_BYTES if max_bytes is None else max_bytes)
    resumed_from = part.stat().st_size if part.exists() else 0
    received = _fetch_with_retries(source, part, progress, limit)
    size = part.stat().st_size
    if limit.capped and size > limit.bytes:
        part.unlink()
        raise limit.exceeded()
    if source.size is not None and size != source.size:
        part.unlink()
        raise FetchError(
            f"{source.url}: received {size:,} bytes, the catalogue says {source.size:,}; the part file was removed"
        )
    digest = file_sha256(part)
    if source.sha256 is not None and digest != source.sha256:
        part.unlink()
        raise FetchError(
            f"{source.url}: checksum mismatch: expected sha256 {source.sha256}, got {digest}; "
            "the part file was removed and nothing was imported"
        )
    os.replace(part, target)
    _write_stamp(target, digest, size)
    return Downloaded(
        path=target,
        sha256=digest,
        size=size,
        received=received,
        resumed_from=min(resumed_from, size),
        verified=source.sha256 is not None,
    )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _already_here(source: SourceFile, target: Path, say: Callable[[str], None]) -> Downloaded | None:
    if not target.is_file():
        return None
    size = target.stat().st_size
    stamped = present(source, target.parent)
    digest = file_sha256(target)  # hashed again every time: a file changed in place is never trusted
    if source.sha256 is None or digest == source.sha256:
        if stamped is None:
            _write_stamp(target, digest, size)
        return Downloaded(target, digest, size, received=0, resumed_from=0, verified=source.sha256 is not None)
    say(f"{target.name}: present but its sha256 is {digest}, not the catalogue's {source.sha256}: downloading again")
    target.unlink()
    stamp_path(target).unlink(missing_ok=True)
    return None


def _fetch_with_retries(source: SourceFile, part: Path, progress: TextIO | None, limit: _Limit) -> int:
    received = 0
    for attempt in range(len(RETRY_DELAYS) + 1):
        try:
            return received + _fetch_once(source, part, progress, limit)
        except _Transient as error:
            received += error.args[1]
            if attempt == len(RETRY_DELAYS):
                raise FetchError(
                    f"{source.url}: {error.args[0]}; gave up after {attempt + 1} attempts "
                    f"({part.name} is kept: the next fetch resumes from it)"
                ) from None
            sleep(RETRY_DELAYS[attempt])
    raise AssertionError("unreachable")


def _fetch_once(source: SourceFile, part: Path, progress: TextIO | None, limit: _Limit) -> int:
    """Append the rest of the file to `part`; the number of bytes read. Raises _Transient(message,
    bytes read) for failures worth retrying."""
    offset = part.stat().st_size if part.exists() else 0
    if source.size is not None and offset == source.size:
        return 0
    scheme = urlsplit(source.url).scheme
    if scheme == "file":
        return _copy_local(source, part, offset, progress, limit)
    if scheme not in ("http", "https"):
        raise FetchError(f"{source.url}: only http, https and file URLs are fetched")
    response = _open(source, part, offset)
    if response is None:
        return 0
    with response:
        mode, offset = _resumed(source, response, offset)
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and offset + int(declared) > limit.bytes:
            part.unlink(missing_ok=True)
            raise limit.exceeded(offset + int(declared))
        with part.open(mode) as sink:
            return _stream(response, sink, Progress(progress, source.name, source.size, offset), part, limit)


def _open(source: SourceFile, part: Path, offset: int) -> http.client.HTTPResponse | None:
    """The response from `offset` on (an http or https URL), or None where the server says the part
    file already holds the whole file."""
    request = urllib.request.Request(source.url, headers={"User-Agent": USER_AGENT})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        return urllib.request.urlopen(request, timeout=TIMEOUT)  # noqa: S310 (the caller checked the scheme)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset and source.size is None:
            return None  # a range past the end of a file of unknown size: the part file is whole
        raise _http_failure(source, part, offset, error) from None
    except urllib.error.URLError as error:
        if isinstance(error.reason, (socket.gaierror, ssl.SSLCertVerificationError, ConnectionRefusedError)):
            # No retry can mend an unknown host, a certificate that does not verify or a refused port.
            raise FetchError(f"{source.url}: cannot connect: {error.reason}") from None
        raise _Transient(f"cannot connect: {error.reason}", 0) from None
    except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
        raise _Transient(f"cannot connect: {error}", 0) from None


def _http_failure(source: SourceFile, part: Path, offset: int, error: urllib.error.HTTPError) -> Exception:
    """An HTTP error status as _Transient (worth retrying; a refused range starts over) or FetchError."""
    if error.code == 416:
        part.unlink()
        return _Transient(f"the server refused the range from byte {offset:,} (HTTP 416); starting over", 0)
    if error.code in RETRIED_STATUS:
        return _Transient(f"HTTP {error.code} {error.reason}", 0)
    return FetchError(f"{source.url}: HTTP {error.code} {error.reason}")


def _resumed(source: SourceFile, response: http.client.HTTPResponse, offset: int) -> tuple[str, int]:
    """How to write the body to the part file and from which byte: appended after a 206 that starts
    where asked, written over from 0 after a 200."""
    if offset and response.status == 206:
        start = _range_start(response.headers.get("Content-Range", ""))
        if start != offset:
            raise FetchError(
                f"{source.url}: asked for bytes from {offset:,}, the server answered from {start} "
                f"(Content-Range {response.headers.get('Content-Range')!r})"
            )
        return "ab", offset
    if offset:
        return "wb", 0  # 200: the whole file again
    return "ab", offset


def _copy_local(source: SourceFile, part: Path, offset: int, progress: TextIO | None, limit: _Limit) -> int:
    path = Path(unquote(urlsplit(source.url).path))
    if not path.is_file():
        raise FetchError(f"{source.url}: no such file")
    with path.open("rb") as origin, part.open("ab") as sink:
        origin.seek(offset)
        return _stream(origin, sink, Progress(progress, source.name, source.size, offset), part, limit)


def _stream(
    origin: IO[bytes] | http.client.HTTPResponse, sink: IO[bytes], progress: Progress, part: Path, limit: _Limit
) -> int:
    """Copy until the end; a source that sends more than the catalogue's size (or, with none, the cap)
    is cut off at once."""
    received = 0
    while True:
        try:
            block = origin.read(CHUNK)
        except (TimeoutError, ConnectionError, http.client.HTTPException) as error:
            sink.flush()
            raise _Transient(f"the transfer broke off after {received:,} bytes ({error})", received) from None
        if not block:
            break
        sink.write(block)  # a local write error (disk full) is not retried
        received += len(block)
        progress.advance(len(block))
        if progress.done > limit.bytes:
            sink.close()
            part.unlink()
            raise limit.exceeded()
    progress.finish()
    return received


def _range_start(content_range: str) -> int | None:
    """The first byte of a `Content-Range: bytes START-END/TOTAL` header."""
    unit, _, spec = content_range.partition(" ")
    if unit != "bytes" or "-" not in spec:
        return None
    first = spec.split("-", 1)[0]
    return int(first) if first.isdigit() else None


def _read_stamp(path: Path) -> tuple[str, int] | None:
    try:
        digest, size = stamp_path(path).read_text(encoding="ascii").split()
        return digest, int(size)
    except (OSError, ValueError):
        return None


def _write_stamp(path: Path, digest: str, size: int) -> None:
    stamp_path(path).write_text(f"{digest}  {size}\n", encoding="ascii")
