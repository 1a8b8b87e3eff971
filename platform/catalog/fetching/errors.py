"""The one error fetching raises: a plain message naming the file, the URL or the entry at fault."""

from __future__ import annotations

from plumbing.errors import ApplicationError


class FetchError(ApplicationError, RuntimeError):
    """502 where a request ever meets it: a source elsewhere could not be fetched or read."""

    status = 502
