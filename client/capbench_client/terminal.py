"""Text from the server made safe to print. Names, captions and messages are other people's text,
and a terminal acts on control characters: `ESC ]0;…` sets its title, `ESC [2J` clears it, `CSI`
(U+009B) does the same in one character. Every C0 control, DEL and C1 control is written as its
`\\uXXXX` escape instead (inside JSON that escape means the same character, so a JSON line stays
the same data); plain spaces stay, and where the text is lines (`lines=True`) so do line breaks
(\\n, \\r\\n) and tabs."""

from __future__ import annotations

import codecs
import re
from typing import Any, BinaryIO, TextIO

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def shown(value: Any, *, lines: bool = False) -> str:
    """`value` as text with every control character escaped ("\\u001b"); with `lines`, line breaks
    and tabs kept."""
    return (CONTROL_BUT_LAYOUT if lines else CONTROL).sub(_escape, str(value))


def _escape(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


class SafeText:
    """A text stream (stdout) that writes `shown(text, lines=True)` of what it is given. A "\\r" at
    the end of one write waits for the next, which may start with its "\\n"."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.held = ""

    def write(self, text: str) -> int:
        text, self.held = self.held + text, ""
        if text.endswith("\r"):
            text, self.held = text[:-1], "\r"
        self.stream.write(shown(text, lines=True))
        return len(text)

    def flush(self) -> None:
        if self.held:
            self.stream.write(shown(self.held, lines=True))
            self.held = ""
        self.stream.flush()


class SafeBytes:
    """A binary stream (stdout's buffer) given a download in chunks: read as UTF-8 (undecodable
    bytes as U+FFFD), written back as UTF-8 with its control characters escaped as SafeText does; a
    character split between two chunks is joined first."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.held = ""

    def write(self, data: bytes) -> int:
        self._text(self.decoder.decode(data))
        return len(data)

    def flush(self) -> None:
        self._text(self.decoder.decode(b"", final=True), final=True)
        self.stream.flush()

    def _text(self, text: str, *, final: bool = False) -> None:
        text, self.held = self.held + text, ""
        if text.endswith("\r") and not final:
            text, self.held = text[:-1], "\r"
        self.stream.write(shown(text, lines=True).encode("utf-8"))
