"""Files an importer reads that the publisher ships in another form, computed from the downloaded
one and checked by the catalogue's sha256 of the result.

`pascal50s-references`: the authors' `pascal50S.mat` (a MATLAB struct array `refs` of `image`,
`sent`) becomes `pascal50S_refs.json`, `{image: [about 50 references]}` in the file's order,
written with `json.dumps(..., indent=0, ensure_ascii=False)` and no string changed: byte for byte
the file the test data holds (tests/data/human-judgments/SOURCES.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from catalog.fetching.download import file_sha256
from catalog.fetching.entries import Derivation
from catalog.fetching.errors import FetchError


def derive(step: Derivation, folder: Path) -> Path:
    source, target = folder / step.source, folder / step.target
    if target.is_file() and (step.sha256 is None or file_sha256(target) == step.sha256):
        return target
    if step.step == "pascal50s-references":
        content = _pascal50s_references(source)
    else:
        raise FetchError(f"{step.step}: unknown derivation")
    temporary = target.with_name(target.name + ".deriving")
    temporary.write_bytes(content)
    digest = file_sha256(temporary)
    if step.sha256 is not None and digest != step.sha256:
        temporary.unlink()
        raise FetchError(
            f"{target}: derived from {source.name} with sha256 {digest}, the catalogue expects {step.sha256}"
        )
    os.replace(temporary, target)
    return target


def _pascal50s_references(source: Path) -> bytes:
    import scipy.io  # only this step needs it

    try:
        refs = scipy.io.loadmat(str(source))["refs"][0]
        pool = {str(entry["image"][0]): [str(sentence[0]) for sentence in entry["sent"][0]] for entry in refs}
    except (KeyError, IndexError, ValueError, TypeError, OSError) as error:
        raise FetchError(f"{source}: not the Pascal-50S reference file (a struct array 'refs'): {error}") from None
    return json.dumps(pool, indent=0, ensure_ascii=False).encode("utf-8")
