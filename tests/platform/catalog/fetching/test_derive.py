"""Derived files: Pascal-50S's MATLAB reference pool becomes the JSON the importer reads."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
import scipy.io

from catalog.fetching.derive import derive
from catalog.fetching.entries import Derivation
from catalog.fetching.errors import FetchError


def _mat(path, pool: dict[str, list[str]]) -> None:
    refs = np.zeros((1, len(pool)), dtype=[("image", object), ("sent", object)])
    for index, (image, sentences) in enumerate(pool.items()):
        refs[0, index]["image"] = image
        cells = np.empty((1, len(sentences)), dtype=object)
        for position, sentence in enumerate(sentences):
            cells[0, position] = sentence
        refs[0, index]["sent"] = cells
    scipy.io.savemat(path, {"refs": refs})


def test_pascal50s_references_are_converted_in_order_and_checked(tmp_path):
    pool = {"2008_000001.jpg": ["A dog runs.", "Un café ouvert."], "2008_000002.jpg": ["A boat."]}
    _mat(tmp_path / "pascal50S.mat", pool)
    expected = json.dumps(pool, indent=0, ensure_ascii=False).encode()
    step = Derivation("pascal50s-references", "pascal50S.mat", "refs.json", hashlib.sha256(expected).hexdigest())
    assert derive(step, tmp_path).read_bytes() == expected
    wrong = Derivation("pascal50s-references", "pascal50S.mat", "other.json", "0" * 64)
    with pytest.raises(FetchError, match="the catalogue expects 0000"):
        derive(wrong, tmp_path)
    assert not (tmp_path / "other.json").exists()
