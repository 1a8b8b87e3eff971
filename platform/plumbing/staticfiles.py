"""Static files as `make run` and a deployment serve them (settings: STATICFILES_FINDERS, STORAGES).

- plotly.js from the plotly wheel, and nothing else of the wheel's folder (its Jupyter widget bundle,
  sample data and templates are 15 MB that no page uses): /static/plotly/plotly.min.js.
- collectstatic's compressed copies (brotli at level 9 and gzip, WhiteNoise) made once per file
  content: brotli takes about a second for plotly.js's 4.8 MB, and every `make run` collects
  again, rewriting each script and stylesheet. A copy from an earlier run is kept when it decompresses
  to the file's content (milliseconds).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage

PLOTLY_JS = Path(plotly.__path__[0]) / "package_data" / "plotly.min.js"


class PlotlyFinder(BaseFinder):
    """plotly.min.js under the prefix plotly/ (what a FileSystemFinder entry would give, alone)."""

    name = "plotly/plotly.min.js"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=PLOTLY_JS.parent)
        self.storage.prefix = "plotly"  # type: ignore[attr-defined]  # read by collectstatic and WhiteNoise

    def check(self, **kwargs: Any) -> list:
        return []

    # Not found: [] as Django's own finders answer (staticfiles.finders.find would keep a None).
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> Any:
        found = [str(PLOTLY_JS)] if path == self.name else []
        return found if find_all or kwargs.get("all") or not found else found[0]

    def list(self, ignore_patterns: Any):
        yield PLOTLY_JS.name, self.storage


class _KeptCompressor(Compressor):
    # Brotli's level 9, not its best (11): plotly.js in 1 s instead of 13, 1.23 MB instead of 1.11
    # (gzip: 1.47 MB). Every fresh state folder (a clean `make run`, the tests', an image build) pays it.
    BROTLI_QUALITY = 9

    @staticmethod
    def compress_brotli(data: bytes) -> bytes:
        import brotli

        return brotli.compress(data, quality=_KeptCompressor.BROTLI_QUALITY)

    def compress(self, path: str) -> list[str]:
        with open(path, "rb") as file:
            data = file.read()
        copies = [(path + ".br", _unbrotli)] if self.use_brotli else []
        copies += [(path + ".gz", gzip.decompress)] if self.use_gzip else []
        if copies and all(_holds(copy, expand, data) for copy, expand in copies):
            return [copy for copy, _ in copies]
        return super().compress(path)


def _unbrotli(data: bytes) -> bytes:
    import brotli  # (installed whenever WhiteNoise uses it)

    return brotli.decompress(data)


def _holds(copy: str, expand, data: bytes) -> bool:
    """Whether `copy` is a complete compressed copy of `data` (decompressing takes milliseconds)."""
    try:
        with open(copy, "rb") as file:
            return expand(file.read()) == data
    except Exception:  # missing, cut short or corrupt: made again
        return False


class CompressedManifestStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage (hashed names, brotli and gzip copies), compressing only what changed."""

    def create_compressor(self, **kwargs: Any) -> Compressor:
        return _KeptCompressor(**kwargs)
