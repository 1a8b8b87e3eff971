"""capbench_eval.coco.COCOEvalCap, the pycocoevalcap drop-in, gives pycocoevalcap 1.2's `.eval`,
`.imgToEval` and printed lines on the same pycocotools objects (68 images: Flickr8k-Expert's and a few
awkward ones, tests/evaluation/coco_oracle.py), the same from plain inputs, errors that name the
image, and the other metrics with a notice where SPICE cannot run.

pycocoevalcap starts a METEOR JVM of its own (seconds of CPU: its paraphrase table): the fast test
compares every metric but METEOR with pycocoevalcap's evaluate() run without its Meteor; the slow ones
compare everything, pycocoevalcap running in another process (coco_oracle.py) while ours is computed."""

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import capbench_eval
from capbench_eval.coco import COCOEvalCap
from capbench_eval.metrics import MetricUnavailable, get
from tests.evaluation.coco_oracle import coco_objects, flickr8k_images, pycocoevalcap_evaluate
from tests.judgment_data import ROOT

FLICKR_IMAGES = 60
KEYS = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"]
REFERENCES = {1: ["a dog runs on the grass", "a brown dog in a field"], 2: ["a man rides a bike"]}


@pytest.fixture(scope="module")
def data(judgment_data):
    """({image id: references}, {image id: candidate}) and their pycocotools objects."""
    references, candidates = flickr8k_images(judgment_data / "flickr8k", FLICKR_IMAGES)
    return references, candidates, *coco_objects(references, candidates)


@pytest.fixture(scope="module")
def oracle(judgment_data, tmp_path_factory):
    """pycocoevalcap's full answer (coco_oracle.py's JSON), computed in another process from the time
    this fixture is set up: a test asks for it before `ours`, and calls it when it needs it."""
    output = tmp_path_factory.mktemp("coco") / "oracle.json"
    folder = judgment_data / "flickr8k"
    command = [sys.executable, "-m", "tests.evaluation.coco_oracle", str(folder), str(FLICKR_IMAGES), str(output)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def answer() -> dict:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr[-3000:]
        return json.loads(output.read_text())

    yield answer
    if process.poll() is None:
        process.kill()
        process.communicate()


@pytest.fixture(scope="module")
def ours(data, meteor_index):
    """Our evaluator on the pycocotools objects, and what it printed (METEOR's JVM on these rows'
    cut of the paraphrase table, as a user's second run gets it)."""
    _, _, coco, results = data
    evaluator = COCOEvalCap(coco, results, spice=False)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        evaluator.evaluate()
    return evaluator, printed.getvalue()


@pytest.mark.slow  # pycocoevalcap's own METEOR JVM; first, so that it runs while `ours` is computed
def test_every_number_and_line_is_pycocoevalcaps(oracle, ours):
    evaluator, printed = ours
    expected = oracle()
    assert evaluator.eval == pytest.approx(expected["eval"], abs=1e-9, rel=0)
    assert [image_id for image_id, _ in expected["imgToEval"]] == list(evaluator.imgToEval)
    for image_id, values in expected["imgToEval"]:
        assert evaluator.imgToEval[image_id] == pytest.approx(values, abs=1e-9, rel=0), image_id
    assert printed.splitlines() == [line for line in expected["stdout"].splitlines() if "SPICE" not in line]
    assert "computing METEOR score..." in printed


@pytest.mark.slow  # the `ours` fixture starts METEOR's JVM: 11 s
def test_equals_pycocoevalcap_but_meteor_on_the_same_objects(data, ours):
    references, candidates, coco, results = data
    expected, printed = pycocoevalcap_evaluate(coco, results, left_out=("Spice", "Meteor"))
    evaluator, our_printed = ours
    assert len(references) == FLICKR_IMAGES + 8
    assert list(evaluator.eval) == KEYS
    without_meteor = {key: value for key, value in evaluator.eval.items() if key != "METEOR"}
    assert without_meteor == pytest.approx(expected.eval, abs=1e-9, rel=0)
    assert 0.05 < evaluator.eval["Bleu_4"] < evaluator.eval["Bleu_1"] < 1  # a real set's numbers, not zeros
    assert list(evaluator.imgToEval) == list(expected.imgToEval) == list(candidates)
    for image_id, values in expected.imgToEval.items():
        mine = {key: value for key, value in evaluator.imgToEval[image_id].items() if key != "METEOR"}
        assert mine == pytest.approx(values, abs=1e-9, rel=0), image_id
    assert evaluator.evalImgs == list(evaluator.imgToEval.values())
    assert evaluator.imgToEval[7]["Bleu_4"] == pytest.approx(1.0)  # the candidate copied from its reference
    assert evaluator.imgToEval[3] == {**evaluator.imgToEval[list(candidates)[1]], "image_id": 3}  # the same row twice
    theirs = [line for line in printed.splitlines() if "SPICE" not in line and "METEOR" not in line]
    assert [line for line in our_printed.splitlines() if "METEOR" not in line] == theirs
    assert any(re.fullmatch(r"CIDEr: \d\.\d{3}", line) for line in theirs)


def test_plain_inputs_score_as_the_coco_objects(data, ours, tmp_path):
    references, candidates, _, _ = data
    evaluator, _ = ours
    results = [{"image_id": image_id, "caption": text} for image_id, text in candidates.items()]
    dataset = {
        "images": [{"id": image_id} for image_id in references],
        "annotations": [{"image_id": i, "caption": text} for i, texts in references.items() for text in texts],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    for gts, res in [
        (references, candidates),
        ({i: [{"caption": text} for text in texts] for i, texts in references.items()}, results),
        (dataset, str(path)),
    ]:
        plain = COCOEvalCap(gts, res, verbose=False, spice=False)
        plain.evaluate()
        assert plain.eval == evaluator.eval
        assert plain.imgToEval == evaluator.imgToEval
    assert capbench_eval.COCOEvalCap is COCOEvalCap


@pytest.mark.parametrize(
    "references, results, message",
    [
        (REFERENCES, {1: "a dog", 2: "a man", 3: "a cat"}, "image 3 is in the results but has no reference caption"),
        (REFERENCES, [{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}, {"image_id": 2, "caption": "c"}],
         "image 1: 2 captions in the results"),
        (REFERENCES, {1: "a dog", 2: 42}, "image 2: caption 1 is not a caption string (a int)"),
        ({1: ["a dog", None], 2: ["a man"]}, {1: "a dog", 2: "a man"},
         "image 1: reference 2 is not a caption string (a NoneType)"),
        (REFERENCES, {1: "a dog"}, "image 2 has references but no caption in the results"),
        ({1: [], 2: ["a man"]}, {2: "a man"}, "image 1: no reference caption"),
        ({"1": ["a dog"]}, [{"image_id": 1, "caption": "a dog"}],
         "image 1 is in the results but has no reference caption (the other side names it '1'"),
        ({"annotations": [{"caption": "a dog"}]}, {1: "a dog"}, "references: entry 0 is not an object with an 'image_id'"),
        (REFERENCES, "no-such-file.json", "results: cannot read 'no-such-file.json' as JSON"),
        (REFERENCES, 7, "results: expected a COCO object"),
    ],
    ids=["unreferenced", "two-captions", "not-a-string", "bad-reference", "no-result", "no-reference", "id-types",
         "no-image-id", "no-file", "not-captions"],
)  # fmt: skip
def test_bad_input_names_the_image(references, results, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        COCOEvalCap(references, results, verbose=False, spice=False).evaluate()


def test_two_captions_for_an_image_in_a_loadres_object():
    coco, _ = coco_objects(REFERENCES, {1: "a dog", 2: "a man"})
    with contextlib.redirect_stdout(io.StringIO()):
        twice = coco.loadRes([{"image_id": 1, "caption": "a dog"}, {"image_id": 1, "caption": "a cat"}])
    evaluator = COCOEvalCap(coco, twice, verbose=False, spice=False)
    evaluator.params["image_id"] = [1]
    with pytest.raises(ValueError, match="image 1: 2 captions in the results"):
        evaluator.evaluate()


def test_params_choose_the_images():
    evaluator = COCOEvalCap(REFERENCES, {2: "a man rides a red bike"}, verbose=False, spice=False)
    with pytest.raises(ValueError, match=re.escape("params['image_id'] = cocoRes.getImgIds()")):
        evaluator.evaluate()
    evaluator.params["image_id"] = evaluator.cocoRes.getImgIds()
    evaluator.evaluate()
    assert list(evaluator.imgToEval) == [2]
    evaluator.params["image_id"] = []
    with pytest.raises(ValueError, match="no image to evaluate"):
        evaluator.evaluate()


def test_without_spice_the_reason_is_printed_and_the_others_computed(monkeypatch, capsys):
    reason = "SPICE needs Java (made unavailable by this test)"
    monkeypatch.setattr(get("spice"), "unavailable_reason", lambda: reason)
    evaluator = COCOEvalCap(REFERENCES, {1: "a dog runs in a field", 2: "a man on a bike"})
    evaluator.evaluate()
    printed = capsys.readouterr().out
    assert f"SPICE not computed: {reason}." in printed
    assert printed.index("CIDEr: ") < printed.index("SPICE not computed")
    assert list(evaluator.eval) == KEYS
    assert all(list(values) == ["image_id", *KEYS] for values in evaluator.imgToEval.values())
    assert evaluator.unavailable == {"SPICE": reason}

    quiet = COCOEvalCap(REFERENCES, {1: "a dog runs in a field", 2: "a man on a bike"}, verbose=False)
    with pytest.warns(RuntimeWarning, match="SPICE not computed"):
        quiet.evaluate()
    assert capsys.readouterr().out == ""
    assert quiet.eval == evaluator.eval

    with pytest.raises(MetricUnavailable, match="SPICE was asked for"):
        COCOEvalCap(REFERENCES, {1: "a dog", 2: "a man"}, spice=True).evaluate()
    assert capsys.readouterr().out == ""  # refused before scoring anything


def _pycocoevalcap_spice_problem() -> str | None:
    reason = get("spice").unavailable_reason()
    if reason:
        return f"SPICE cannot run here: {reason}"
    import pycocoevalcap.spice

    if not (Path(pycocoevalcap.spice.__file__).parent / "lib" / "stanford-corenlp-3.6.0.jar").is_file():
        return "pycocoevalcap's SPICE would download CoreNLP 3.6.0 into its wheel's lib/ (not provisioned there)"
    java = shutil.which("java") or "java"
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    found = re.search(r'version "(\d+)', version)
    if found and int(found[1]) >= 16:
        return "pycocoevalcap runs SPICE with -cache, which fails on Java >= 16 (capbench_eval/metrics/graph/spice.py)"
    return None


@pytest.mark.slow
def test_spice_is_pycocoevalcaps(judgment_data):
    problem = _pycocoevalcap_spice_problem()
    if problem:
        pytest.skip(problem)
    references, candidates = flickr8k_images(judgment_data / "flickr8k", 6)
    ascending = sorted(candidates)  # pycocoevalcap pairs per-image SPICE with images in ascending order
    coco, results = coco_objects({i: references[i] for i in ascending}, {i: candidates[i] for i in ascending})
    expected, _ = pycocoevalcap_evaluate(coco, results, left_out=())
    evaluator = COCOEvalCap(coco, results, spice=True, verbose=False)
    evaluator.evaluate()
    assert evaluator.eval["SPICE"] == pytest.approx(expected.eval["SPICE"], abs=1e-9, nan_ok=True)
    for image_id in ascending:
        theirs, mine = expected.imgToEval[image_id]["SPICE"], evaluator.imgToEval[image_id]["SPICE"]
        assert set(mine) == set(theirs)
        for category, block in theirs.items():
            assert mine[category]["f"] == pytest.approx(block["f"], abs=1e-9, nan_ok=True), (image_id, category)
    assert {key: evaluator.eval[key] for key in KEYS} == pytest.approx(
        {key: expected.eval[key] for key in KEYS}, abs=1e-9, rel=0
    )
