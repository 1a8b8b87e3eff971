"""Flickr8k-Expert and -CF protocols on the real files (no database)."""

from collections import Counter
from pathlib import Path

import pytest

from catalog.importers import flickr8k_cf, flickr8k_expert
from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle


@pytest.fixture(scope="module")
def expert(judgment_data):
    return read_bundle("flickr8k-expert", judgment_data / "flickr8k")


@pytest.fixture(scope="module")
def crowd(judgment_data):
    return read_bundle("flickr8k-cf", judgment_data / "flickr8k")


def test_expert_protocol_counts(expert):
    assert len(expert.captions) == 5664
    assert len(expert.judgments) == 16992
    assert expert.report["rows_excluded_self_reference"] == 158
    assert len(expert.items) == 1000


def test_expert_score_distribution_after_exclusion(expert):
    assert Counter(j.value for j in expert.judgments) == {1.0: 9796, 2.0: 4997, 3.0: 1686, 4.0: 513}


def test_expert_no_candidate_is_its_own_reference(expert):
    references = {item.external_id: item.references for item in expert.items}
    assert all(caption.text not in references[caption.key.item] for caption in expert.captions)
    assert all(len(refs) == 5 for refs in references.values())


def test_expert_three_annotators_per_caption(expert):
    per_caption = Counter(j.caption for j in expert.judgments)
    assert set(per_caption.values()) == {3}
    assert {j.annotator for j in expert.judgments} == {"expert_1", "expert_2", "expert_3"}


def test_cf_protocol_counts(crowd):
    assert len(crowd.captions) == 47830
    assert len(crowd.judgments) == 47830
    assert Counter(len(item.references) for item in crowd.items) == {5: 279, 4: 718, 3: 3}
    assert sum(j.detail["yes"] + j.detail["no"] for j in crowd.judgments) == 144860


def test_cf_references_never_contain_a_judged_text(crowd):
    references = {item.external_id: set(item.references) for item in crowd.items}
    assert not any(caption.text in references[caption.key.item] for caption in crowd.captions)


def test_manifest_beside_the_source_is_applied(expert):
    assert expert.report["manifest_matched"] == 1000
    assert all(len(media.expected_md5) == 32 for media in expert.media)


def _write_flickr(tmp_path: Path, annotation_line: str, fmt: str) -> Path:
    (tmp_path / "Flickr8k.token.txt").write_text(
        "".join(f"a.jpg#{i}\tA dog number {i} .\n" for i in range(5))
        + "".join(f"b.jpg#{i}\tA cat number {i} .\n" for i in range(5))
    )
    name = flickr8k_expert.DEFAULT_FILE if fmt == "flickr8k-expert" else flickr8k_cf.DEFAULT_FILE
    (tmp_path / name).write_text("a.jpg\tb.jpg#1\t1\t2\t3\n" + annotation_line)
    return tmp_path


@pytest.mark.parametrize(
    "line, field",
    [
        ("a.jpg\tb.jpg#2\t1\t2\t5\n", "expert_3"),
        ("a.jpg\tb.jpg#9\t1\t2\t3\n", "caption_id"),
        ("zzz.jpg\tb.jpg#2\t1\t2\t3\n", "image"),
        ("a.jpg\tb.jpg#1\t1\t2\t3\n", "caption_id"),
        ("a.jpg\tb.jpg#2\t1\tx\t3\n", "expert_2"),
    ],
)
def test_expert_errors_name_line_and_field(tmp_path, line, field):
    with pytest.raises(ImportFormatError) as error:
        read_bundle("flickr8k-expert", _write_flickr(tmp_path, line, "flickr8k-expert"))
    assert (error.value.line, error.value.field) == (2, field)
    assert "ExpertAnnotations.txt, line 2" in str(error.value)


def test_expert_wrong_field_count_names_line(tmp_path):
    with pytest.raises(ImportFormatError, match=r"line 2: expected 5 tab-separated fields"):
        read_bundle("flickr8k-expert", _write_flickr(tmp_path, "a.jpg\tb.jpg#2\t1\n", "flickr8k-expert"))


def test_cf_fraction_must_match_votes(tmp_path):
    path = _write_flickr(tmp_path, "a.jpg\tb.jpg#2\t0.5\t3\t0\n", "flickr8k-cf")
    (path / flickr8k_cf.DEFAULT_FILE).write_text("a.jpg\tb.jpg#1\t1\t3\t0\na.jpg\tb.jpg#2\t0.5\t3\t0\n")
    with pytest.raises(ImportFormatError) as error:
        read_bundle("flickr8k-cf", path)
    assert (error.value.line, error.value.field) == (2, "yes_fraction")


def test_invalid_utf8_is_reported_with_its_line(tmp_path):
    path = _write_flickr(tmp_path, "", "flickr8k-expert")
    (path / "Flickr8k.token.txt").write_bytes(b"a.jpg#0\tok\nb.jpg#0\tbad \xff byte\n")
    with pytest.raises(ImportFormatError, match=r"Flickr8k.token.txt, line 2: not valid UTF-8"):
        read_bundle("flickr8k-expert", path)
