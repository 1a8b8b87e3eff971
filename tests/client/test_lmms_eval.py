"""lmms-eval's `--log_samples` output read by the client (capbench_client/lmms_eval.py, results.py):
each layout lmms-eval has written gives the model's response and the image id; samples map to the
dataset's items by their references, else their image id, never by doc_id's position; a sample
that maps to nothing is named by its line, doc_id and id, and nothing is submitted. The fixtures in
tests/fixtures/lmms-eval/ are written in the format docs/client.md describes ("lmms-eval's
samples"), for the Karpathy fixtures' test images (tests/fixtures/datasets/karpathy/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capbench_client import cli
from capbench_client.lmms_eval import read_samples, sample
from capbench_client.problems import FileError, FileProblems
from capbench_client.references import Reference, ReferenceSet
from capbench_client.results import matched_results, results_format

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
COCO = FIXTURES / "lmms-eval" / "20250301_120000_samples_coco_karpathy_test.jsonl"
FLICKR = FIXTURES / "lmms-eval" / "20260301_120000_samples_flickr30k_test.jsonl"


def karpathy_test(corpus: str, *, hidden: bool = False) -> ReferenceSet:
    """The Karpathy fixture's test images as a references file gives them (item: the cocoid, else
    the file name's stem), with their raw sentences as references (None: a hidden test set)."""
    images = json.loads((FIXTURES / "datasets" / "karpathy" / f"dataset_{corpus}.json").read_text())["images"]
    rows = [
        Reference(
            str(image.get("cocoid") or Path(image["filename"]).stem),
            image["filename"],
            position,
            None if hidden else tuple(sentence["raw"] for sentence in image["sentences"]),
        )
        for position, image in enumerate(image for image in images if image["split"] == "test")
    ]
    return ReferenceSet(f"{corpus}-karpathy-test", rows)


def samples_file(tmp_path: Path, *lines: dict) -> Path:
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_fixture_is_read_as_lmms_eval_with_each_response_image_id_and_references():
    assert results_format(COCO) == "lmms-eval"
    problems = FileProblems(COCO.name)
    samples = read_samples(COCO, problems)
    assert not problems
    assert [(s.doc_id, s.image_id, s.caption) for s in samples] == [
        (0, "391895", "A man riding a bike down a dirt road."),
        (1, "184613", "A child holding an umbrella in the rain."),
        (2, "554625", "A dog lying on a wooden floor."),
    ]
    assert samples[0].references[0] == "A test scene number 391895 with a dog."


def test_every_layout_lmms_eval_has_written_gives_the_scored_response():
    record = {"coco_CIDEr": {"answer": ["a dog"], "pred": "x", "image_id": 391895, "id": 0}}
    # 0.2: the document kept (less its image fields), responses nested per request and repeat.
    kept = {"doc_id": 4, "doc": {"question_id": "COCO_val2014_000000391895.jpg"}, "resps": [["a dog."]],
            "filtered_resps": ["a dog."], "arguments": {"0": {"max_new_tokens": 64}}, **record}  # fmt: skip
    # 0.3 to 0.6: `resps` left out when equal to `filtered_resps`, a list of one text.
    listed = {"doc_id": 4, "filtered_resps": ["a cat."], **record}
    # 0.7: `filtered_resps` the text itself; `resps` the raw text where reasoning tags were stripped.
    flat = {"doc_id": 4, "resps": ["<think>hm</think>a cow."], "filtered_resps": "a cow.", **record}
    raw_only = {"doc_id": 4, "resps": [["a hen."]], **record}
    found = [sample(1, line) for line in (kept, listed, flat, raw_only)]
    assert [s.caption for s in found] == ["a dog.", "a cat.", "a cow.", "a hen."]
    assert {s.image_id for s in found} == {"391895"}
    assert found[0].names == ("COCO_val2014_000000391895.jpg",)


def test_samples_map_by_image_id_where_the_references_are_hidden():
    matched = matched_results(COCO, karpathy_test("coco", hidden=True))
    assert matched.captions == {
        "391895": "A man riding a bike down a dirt road.",
        "184613": "A child holding an umbrella in the rain.",
        "554625": "A dog lying on a wooden floor.",
    }
    assert matched.missing == []
    assert json.loads(matched.results_json())[0] == {
        "image_id": "391895",
        "caption": "A man riding a bike down a dirt road.",
    }


def test_a_file_name_maps_too_and_a_sample_without_any_id_is_refused_not_placed_by_doc_id(tmp_path):
    references = karpathy_test("coco", hidden=True)
    named = {"doc_id": 0, "doc": {"filename": "COCO_val2014_000000184613.jpg"}, "filtered_resps": ["a child."]}
    assert matched_results(samples_file(tmp_path, named), references).captions == {"184613": "a child."}
    mme = {"doc_id": 0, "filtered_resps": ["Yes"], "mme_percetion_score": {"question_id": "code/0.png", "score": 1}}
    with pytest.raises(FileError) as refused:
        matched_results(samples_file(tmp_path, mme), references, "lmms-eval")
    assert refused.value.problems == [
        "line 1 (doc_id 0): no image id: not a sample of lmms-eval's COCO, nocaps or Flickr30k captioning "
        "tasks (their per-sample records carry image_id)"
    ]


def test_flickr30k_samples_map_by_their_references_not_their_running_image_id():
    """lmms-eval's Flickr30k `image_id` is the Karpathy file's running imgid (0, 1, …), and its test
    split is all of Flickr30k: the board's images are found by their references, the others named."""
    references = karpathy_test("flickr30k")
    with pytest.raises(FileError) as refused:
        matched_results(FLICKR, references)
    assert refused.value.problems == [
        f"line {line} (doc_id {doc}): image id '{doc}' is not an image of dataset 'flickr30k-karpathy-test' "
        "(its ids look like '1007129816')"
        for line, doc in ((1, 0), (3, 2), (5, 4))
    ]
    matched = matched_results(FLICKR, references, skip_unmatched=True)
    assert matched.captions == {
        "1007129816": "A man in a shirt stands outside.",
        "101362133": "A young man with shaggy hair looks down.",  # filtered_resps: the reasoning stripped
    }
    assert matched.skipped == 3


def test_a_second_sample_of_one_image_and_an_empty_response_are_named_by_line(tmp_path):
    record = {"coco_CIDEr": {"pred": "", "image_id": 391895}}
    lines = [
        {"doc_id": 0, "filtered_resps": ["a man."], **record},
        {"doc_id": 1, "filtered_resps": ["another man."], **record},
        {"doc_id": 2, "filtered_resps": [" "], "coco_CIDEr": {"image_id": 184613}},
    ]
    with pytest.raises(FileError) as refused:
        matched_results(samples_file(tmp_path, *lines), karpathy_test("coco", hidden=True), "lmms-eval")
    assert refused.value.problems == [
        "line 2 (doc_id 1): image '391895' again (first at line 1 (doc_id 0)); one sample per image",
        "line 3 (doc_id 2): the model's response is empty",
    ]


def test_submit_refuses_unmatched_samples_before_any_request_and_names_them(tmp_path, capsys):
    """The references come from a file here, and the server is one that does not exist: nothing is
    sent, so nothing can be submitted."""
    references = tmp_path / "references.jsonl"
    references.write_text(
        "".join(
            json.dumps({"item": row.item, "image": row.image, "position": row.position, "references": None}) + "\n"
            for row in karpathy_test("flickr30k").rows
        )
    )
    code = cli.main(
        ["--url", "http://127.0.0.1:9", "--retries", "0", "submit", "flickr30k-karpathy-test", str(FLICKR),
         "--references", str(references)]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "line 1 (doc_id 0): image id '0' is not an image of dataset 'flickr30k-karpathy-test'" in err
    assert err.rstrip().endswith("nothing was submitted")
