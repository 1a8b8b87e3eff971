"""The one error fetching raises: a plain message naming the file, the URL or the entry at fault."""

from __future__ import annotations


class FetchError(RuntimeError):
    pass
