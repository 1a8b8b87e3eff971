"""A tiny HTTP server for the fetch tests: serves named byte strings on 127.0.0.1, honours
`Range: bytes=N-` with 206 (or ignores it and answers 200 when told to), and counts the bytes sent.
`send_length=False` leaves out `Content-Length` (the body ends when the connection closes)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Served:
    files: dict[str, bytes]
    honour_range: bool = True
    bytes_sent: int = 0
    requests: list[tuple[str, str | None, int]] = field(default_factory=list)  # (path, Range header, status)
    base: str = ""


@contextmanager
def range_server(
    files: dict[str, bytes],
    *,
    honour_range: bool = True,
    unavailable: tuple[str, ...] = (),
    send_length: bool = True,
) -> Iterator[Served]:
    """`unavailable`: paths answered 503 Service Unavailable (a transient failure)."""
    served = Served(files=dict(files), honour_range=honour_range)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server API)
            body = served.files.get(self.path.lstrip("/"))
            wanted = self.headers.get("Range")
            if self.path.lstrip("/") in unavailable:
                served.requests.append((self.path, wanted, 503))
                self.send_error(503)
                return
            if body is None:
                served.requests.append((self.path, wanted, 404))
                self.send_error(404)
                return
            start = 0
            if wanted and served.honour_range:
                start = int(wanted.removeprefix("bytes=").split("-")[0])
            status = 206 if wanted and served.honour_range else 200
            served.requests.append((self.path, wanted, status))
            self.send_response(status)
            if send_length:
                self.send_header("Content-Length", str(len(body) - start))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.end_headers()
            try:
                self.wfile.write(body[start:])
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading: a refused download
                return
            served.bytes_sent += len(body) - start

        def log_message(self, format: str, *args: object) -> None:  # quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.shutdown()
        server.server_close()
