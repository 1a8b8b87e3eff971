"""The canonical format: writing and reading back without the database, and its errors."""

import io
import json

import pytest

from catalog.importers import canonical
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle


def test_source_bundle_survives_canonical_text(judgment_data, tmp_path):
    bundle = read_bundle("pascal50s", judgment_data / "pascal50s")
    path = tmp_path / "pascal.jsonl"
    with path.open("w") as stream:
        canonical.write(bundle, stream)
    again = read_bundle("canonical", path)
    assert again.fingerprint() == bundle.fingerprint()
    assert again.counts() == bundle.counts()


def _lines(bundle_path):
    return [json.loads(line) for line in bundle_path.read_text().splitlines()]


@pytest.fixture
def tiny(tmp_path, judgment_data):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    bundle.items, bundle.captions, bundle.media = bundle.items[:2], bundle.captions[:2], bundle.media[:2]
    bundle.judgments = [j for j in bundle.judgments if j.caption in {c.key for c in bundle.captions}]
    buffer = io.StringIO()
    canonical.write(bundle, buffer)
    path = tmp_path / "tiny.jsonl"
    path.write_text(buffer.getvalue())
    return path


def _rewrite(path, index, change):
    rows = _lines(path)
    rows[index] = {**rows[index], **change} if change is not None else rows[index]
    if change is None:
        del rows[index]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_tiny_reads(tiny):
    assert read_bundle("canonical", tiny).counts()["judgments"] == 16


@pytest.mark.parametrize(
    "index, change, line, field",
    [
        (0, {"format": "other"}, 1, "format"),
        (0, {"kind": "stars"}, 1, "kind"),
        (4, {"media": "missing.avi"}, 5, "media"),
        (6, {"item": "nope"}, 7, "item"),
        (6, {"system": "ghost"}, 7, "system"),
        (6, {"text": ""}, 7, "text"),
        (8, {"value": "high"}, 9, "value"),
        (8, {"caption": "zzz"}, 9, "caption"),
    ],
)
def test_canonical_errors_name_line_and_field(tiny, index, change, line, field):
    _rewrite(tiny, index, change)
    with pytest.raises(ImportFormatError) as error:
        read_bundle("canonical", tiny)
    assert (error.value.line, error.value.field) == (line, field)


def test_first_line_must_be_the_dataset(tiny):
    _rewrite(tiny, 0, None)
    with pytest.raises(ImportFormatError, match="line 1: field 'type': the first line must be the dataset"):
        read_bundle("canonical", tiny)


def test_duplicate_caption_is_an_error(tiny):
    text = tiny.read_text().splitlines()
    text.insert(7, text[6])
    tiny.write_text("\n".join(text) + "\n")
    with pytest.raises(ImportFormatError, match="line 8: field 'id'"):
        read_bundle("canonical", tiny)
