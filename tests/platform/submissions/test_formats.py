"""Reading results files: the three formats, and every problem named with its place."""

import json

import pytest

from submissions.formats import SubmissionFileError, detect_format, read_submission


def read(name: str, content: bytes | str, limit: int = 100):
    data = content.encode() if isinstance(content, str) else content
    return read_submission(name, data, max_caption_chars=limit)


def problems(name: str, content: bytes | str, limit: int = 100) -> list[str]:
    with pytest.raises(SubmissionFileError) as caught:
        read(name, content, limit)
    return caught.value.problems


def test_coco_results_jsonl_and_csv_give_the_same_captions():
    entries = [{"image_id": 42, "caption": "A dog runs."}, {"image_id": "b.jpg", "caption": " two cats "}]
    coco = read("results.json", json.dumps(entries))
    lines = read("results.jsonl", "\n".join(json.dumps(e) for e in entries) + "\n\n")
    table = read("results.csv", 'image_id,caption\n42,A dog runs.\nb.jpg," two cats "\n')
    assert coco[0] == "json"
    assert lines[0] == "jsonl"
    assert table[0] == "csv"
    for _, captions in (coco, lines, table):
        assert [(c.image_id, c.caption) for c in captions] == [("42", "A dog runs."), ("b.jpg", "two cats")]
    assert [c.where for c in coco[1]] == ["entry 1", "entry 2"]
    assert [c.where for c in table[1]] == ["line 2", "line 3"]


def test_format_is_sniffed_when_the_extension_says_nothing():
    assert detect_format("upload", b'  [{"image_id": 1}]') == "json"
    assert detect_format("upload.txt", b'{"image_id": 1}\n') == "jsonl"
    assert detect_format("upload", b"image_id,caption\n") == "csv"


def test_a_utf8_bom_is_accepted_and_bad_utf8_is_located():
    assert read("r.json", b'\xef\xbb\xbf[{"image_id": 1, "caption": "caf\xc3\xa9"}]')[1][0].caption == "café"
    assert problems("r.jsonl", b'{"image_id": 1, "caption": "ok"}\n{"image_id": 2, "caption": "caf\xe9"}\n') == [
        "line 2, column 32: not valid UTF-8"
    ]


def test_json_syntax_errors_name_line_and_column():
    assert problems("r.json", '[{"image_id": 1,\n "caption": "x",}]') == [
        "line 2, column 17: invalid JSON: Expecting property name enclosed in double quotes"
    ]
    assert problems("r.json", '{"image_id": 1}')[0].startswith("expected a JSON list of")


def test_every_field_problem_is_reported_with_its_entry():
    entries = [
        {"image_id": 1, "caption": "fine"},
        {"caption": "no id"},
        {"image_id": True, "caption": "x"},
        {"image_id": 4, "caption": 7},
        {"image_id": 5, "caption": "   "},
        {"image_id": 6, "caption": "y" * 101},
        "not an object",
    ]
    assert problems("r.json", json.dumps(entries)) == [
        "entry 2, field 'image_id': missing",
        "entry 3, field 'image_id': expected a string or an integer, got true",
        "entry 4, field 'caption': expected a string, got int",
        "entry 5, field 'caption': empty",
        "entry 6, field 'caption': 101 characters, more than the limit of 100",
        "entry 7: expected an object with image_id and caption, got str",
    ]


def test_csv_without_the_needed_columns_says_which():
    assert problems("r.csv", "id,text\n1,a dog\n") == [
        "line 1: the CSV header needs the columns image_id and caption; missing image_id, caption (found: id, text)"
    ]


def test_many_kinds_of_problems_are_capped_and_counted():
    lines = "\n".join(f'{{"image_id": 1, "caption": "{"y" * (101 + n)}"}}' for n in range(25))
    with pytest.raises(SubmissionFileError) as caught:
        read("r.jsonl", lines)
    assert len(caught.value.problems) == 20
    assert caught.value.more == 5
    assert str(caught.value).splitlines()[-1] == "r.jsonl: … and 5 more problem(s)"


def test_the_same_problem_on_many_lines_is_written_once_with_its_lines():
    lines = ['{"image_id": 1, "caption": "fine"}'] * 400
    for number in range(3, 400, 3):  # 133 entries without a caption, among other problems
        lines[number - 1] = '{"image_id": 1}'
    lines[1] = "[1]"
    with pytest.raises(SubmissionFileError) as caught:
        read("r.jsonl", "\n".join(lines))
    assert caught.value.problems == [
        "line 2: expected an object with image_id and caption, got list",
        "133 lines (3, 6, 9, 12, 15, 18, 21, 24, 27, 30 and 123 more), field 'caption': expected a string, got nothing",
    ]
    assert caught.value.more == 0


def test_a_problem_found_once_keeps_its_own_words_and_a_few_list_their_places():
    assert problems("r.jsonl", '{"image_id": 1, "caption": "a"}\n{"image_id": 2}') == [
        "line 2, field 'caption': expected a string, got nothing"
    ]
    assert problems("r.json", '[{"image_id": 1, "caption": ""}, {"image_id": 2, "caption": " "}]') == [
        "entries 1, 2, field 'caption': empty"
    ]


def test_an_empty_file_is_refused():
    assert problems("r.json", "[]") == ["the file has no captions"]


def test_hostile_json_is_a_problem_report_not_a_crash():
    assert problems("r.json", '[{"image_id": ' + "9" * 5000 + ', "caption": "x"}]')[0].startswith(
        "not a results file: Exceeds the limit"
    )
    assert problems("r.json", "[" * 100_000 + "]" * 100_000)[0].startswith("not a results file:")
    assert problems("r.jsonl", '{"image_id": ' + "9" * 5000 + "}")[0].startswith("line 1: not a results entry:")


def test_unpaired_surrogates_are_refused_and_raw_line_separators_are_kept():
    assert problems("r.json", '[{"image_id": 1, "caption": "a \\ud800 dog"}]') == [
        "entry 1, field 'caption': contains an unpaired surrogate (\\ud800–\\udfff), not text"
    ]
    line = '{"image_id": 1, "caption": "two\u2028lines"}\n'
    assert read("r.jsonl", line)[1][0].caption == "two\u2028lines"


def test_a_bom_does_not_hide_json_from_the_sniffer():
    assert detect_format("upload", b'\xef\xbb\xbf[{"image_id": 1}]') == "json"


def test_control_characters_in_a_caption_are_refused_with_their_place_and_line_breaks_are_kept():
    """Captions are shown to annotators and printed by `capbench scores`: `ESC ]0;…` (a terminal's
    title), CSI (U+009B), DEL are refused in every format, with the entry or line, the field and
    the character; a tab or a line break inside a caption is text."""
    evil = "a dog\x1b]0;owned\x07"
    assert problems("r.json", json.dumps([{"image_id": 1, "caption": "fine"}, {"image_id": 2, "caption": evil}])) == [
        "entry 2, field 'caption': contains a control character (U+001B at character 6); write plain text"
    ]
    assert problems("r.jsonl", json.dumps({"image_id": 1, "caption": "a \x9b2J cat"})) == [
        "line 1, field 'caption': contains a control character (U+009B at character 3); write plain text"
    ]
    assert problems("r.csv", "image_id,caption\n1,fine\n2,a\x7fcat\n") == [
        "line 3, field 'caption': contains a control character (U+007F at character 2); write plain text"
    ]
    _, captions = read("r.jsonl", json.dumps({"image_id": 1, "caption": "a dog\ton\r\ntwo lines"}))
    assert captions[0].caption == "a dog\ton\r\ntwo lines"
