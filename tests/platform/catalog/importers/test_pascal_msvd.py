"""Pascal-50S and MSVD-Eval protocols on the real files (no database)."""

import json
from collections import Counter

import pytest

from catalog.importers.errors import ImportFormatError
from catalog.importers.registry import read_bundle


@pytest.fixture(scope="module")
def pascal(judgment_data):
    return read_bundle("pascal50s", judgment_data / "pascal50s")


def test_pascal_pairs_by_category(pascal):
    assert len(pascal.pairs) == 4000
    assert Counter(pair.category for pair in pascal.pairs) == {"HC": 1000, "HI": 1000, "HM": 1000, "MM": 1000}


def test_pascal_items_carry_the_50_reference_pool_and_pairs_their_draw(pascal, judgment_data):
    assert len(pascal.items) == 1000
    assert all(len(item.references) == 50 for item in pascal.items)
    assert all(len(pair.references) == 5 for pair in pascal.pairs)


def test_pascal_label_zero_means_first_caption_wins(pascal, judgment_data):
    source = json.loads((judgment_data / "pascal50s" / "pascal_50s.json").read_text())
    texts = {caption.key: caption.text for caption in pascal.captions}
    first = source["HC"][0]
    pair = next(p for p in pascal.pairs if p.external_id == "HC-0000")
    assert pair.winner == ("a" if first["label"] == 0 else "b")
    assert [texts[pair.caption_a], texts[pair.caption_b]] == [" ".join(c.split()) for c in first["captions"]]
    assert Counter(p.winner for p in pascal.pairs).keys() <= {"a", "b"}


def test_pascal_pair_captions_belong_to_the_pair_item(pascal):
    assert all(p.caption_a.item == p.item == p.caption_b.item for p in pascal.pairs)


def test_msvd_eval_protocol(judgment_data):
    bundle = read_bundle("msvd-eval", judgment_data / "msvd_eval")
    assert len(bundle.items) == 197
    assert len(bundle.captions) == 197
    rows = {(j.caption, j.annotator) for j in bundle.judgments}
    assert len(rows) == 394
    assert Counter(j.dimension for j in bundle.judgments) == {
        "accuracy": 394,
        "completeness": 394,
        "conciseness": 394,
        "relevance": 394,
    }
    assert all(media.kind == "video" for media in bundle.media)


def test_msvd_eval_inconsistent_average_is_an_error(tmp_path):
    (tmp_path / "MSVD-Eval.json").write_text(
        json.dumps(
            {
                "vid1": {
                    "vname": "x.avi",
                    "ref": ["a man"],
                    "candidate": "a person",
                    "human_score": [[4, 3, 4, 5, 4.0], [4, 3, 4, 4, 3.0]],
                }
            }
        )
    )
    with pytest.raises(ImportFormatError) as error:
        read_bundle("msvd-eval", tmp_path)
    assert error.value.field == "vid1.human_score[1][4]"


def test_pascal_unknown_category_is_named(tmp_path, judgment_data):
    (tmp_path / "pascal_50s.json").write_text(json.dumps({"XX": []}))
    (tmp_path / "pascal50S_refs.json").write_text("{}")
    with pytest.raises(ImportFormatError, match="field 'XX': unknown category"):
        read_bundle("pascal50s", tmp_path)


def test_pascal_json_syntax_error_names_line(tmp_path):
    (tmp_path / "pascal_50s.json").write_text('{"HC": [\n  {"image": "a.jpg",,}\n]}')
    (tmp_path / "pascal50S_refs.json").write_text("{}")
    with pytest.raises(ImportFormatError, match=r"pascal_50s.json, line 2: invalid JSON"):
        read_bundle("pascal50s", tmp_path)
