"""`capbench references` and `capbench eval` against a live server: the number a researcher gets on
their own machine is the number the board keeps for the same file once submitted (value and 95%
interval), with the signature the server gives the metric; the references file read offline gives
the same; and lmms-eval's samples go through `capbench submit` to the dataset's images."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from capbench_client import Client, cli
from catalog.importers.registry import read_bundle
from catalog.models import Caption, Item
from catalog.services.imports import dataset_import
from scoring.models import SystemScore
from submissions.models import Submission
from submissions.services import submission_plan
from tests.platform.factories import results_file
from tests.platform.scoring.inline import run_jobs

# The tests with a live server (a thread reading the test database: what they write is committed).
committed = pytest.mark.django_db(transaction=True)
served = pytest.mark.usefixtures("live_server_connections_closed", "this_runs_queues", "fresh_rate_limits")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
METRICS = ["bleu_4", "rouge_l", "cider_d"]


@pytest.fixture
def capbench(live_server, django_user_model, capsys):
    """The command run in this process against the live server as a signed-up user: (status, out, err)."""
    user = django_user_model.objects.create_user("ada", password="a long test password")
    token = Token.objects.create(user=user).key

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = cli.main(["--url", live_server.url, "--token", token, "--retries", "0", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.mark.slow  # scores the demo's 100 captions twice, here and as the board does
@committed
@served
def test_capbench_eval_gives_the_number_and_interval_the_board_keeps_for_the_same_file(
    capbench, live_server, demo_dataset, tmp_path
):
    results = tmp_path / "my-captioner.json"
    results.write_bytes(
        results_file(demo_dataset, lambda item: " ".join(item.references[0].split()[:7]), shuffled=True)
    )

    code, out, err = capbench("references", "demo", "-o", str(tmp_path / "demo-references.jsonl"))
    assert code == 0, err
    code, out, err = capbench(
        "eval", "demo", str(results), "--metric", "bleu_4,rouge_l", "--metric", "cider_d", "--json"
    )
    assert code == 0, err
    local = {row["metric"]: row for row in json.loads(out)["metrics"]}
    code, offline, err = capbench(
        "eval",
        "demo",
        str(results),
        "--metric",
        ",".join(METRICS),
        "--references",
        str(tmp_path / "demo-references.jsonl"),
    )
    assert code == 0, err

    code, out, err = capbench("submit", "demo", str(results), *[f"--metric={slug}" for slug in METRICS])
    assert code == 0, err
    submission = Submission.objects.get()
    run_jobs(submission_plan(submission_id=submission.pk))
    for slug in METRICS:
        board = SystemScore.objects.get(system=submission.system, metric_version__metric__slug=slug)
        assert (local[slug]["value"], local[slug]["low"], local[slug]["high"]) == pytest.approx(
            (board.value, board.low, board.high), rel=1e-12, abs=1e-15
        ), slug
        assert local[slug]["images"] == board.images == 100
        points = local[slug]["points"]
        assert f"{board.value * points:.2f} [{board.low * points:.2f}, {board.high * points:.2f}]" in offline
        assert local[slug]["signature"] in offline
        assert local[slug]["signature"] == Client(live_server.url).metric(slug)["signature"]  # the server's own
        assert local[slug]["board_signature"] is None  # so no note that they differ


@pytest.mark.slow  # a live server
@committed
@served
def test_lmms_eval_samples_go_to_the_datasets_images_and_unmatched_ones_submit_nothing(capbench):
    for corpus in ("coco", "flickr30k"):
        bundle = read_bundle("karpathy", FIXTURES / "datasets" / "karpathy" / f"dataset_{corpus}.json")
        dataset_import(bundle=bundle, source_path="test", slug=f"{corpus}-karpathy-test")
    coco = FIXTURES / "lmms-eval" / "20250301_120000_samples_coco_karpathy_test.jsonl"
    flickr = FIXTURES / "lmms-eval" / "20260301_120000_samples_flickr30k_test.jsonl"

    code, out, err = capbench("submit", "coco-karpathy-test", str(coco), "--format", "lmms-eval", "--name", "LLaVA")
    assert code == 0, err
    submission = Submission.objects.get()
    captions = dict(Caption.objects.filter(system=submission.system).values_list("item__external_id", "text"))
    assert captions == {
        "391895": "A man riding a bike down a dirt road.",
        "184613": "A child holding an umbrella in the rain.",
        "554625": "A dog lying on a wooden floor.",
    }
    assert submission.method_name == "LLaVA"

    code, out, err = capbench("submit", "flickr30k-karpathy-test", str(flickr))  # the format found by itself
    assert code == 1
    assert "line 1 (doc_id 0): image id '0' is not an image of dataset 'flickr30k-karpathy-test'" in err
    assert "nothing was submitted" in err
    assert Submission.objects.count() == 1
    code, out, err = capbench("submit", "flickr30k-karpathy-test", str(flickr), "--skip-unmatched")
    assert code == 0, err
    assert "left out 3 lines" in err
    flickr_system = Submission.objects.exclude(pk=submission.pk).get().system
    assert set(Caption.objects.filter(system=flickr_system).values_list("item__external_id", flat=True)) == set(
        Item.objects.filter(dataset__slug="flickr30k-karpathy-test").values_list("external_id", flat=True)
    )


def test_eval_without_the_library_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    for name in [name for name in sys.modules if name.split(".")[0] == "capbench_eval"] or ["capbench_eval"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError
    results = tmp_path / "results.json"
    results.write_text('[{"image_id": "1", "caption": "a dog"}]')
    code = cli.main(["eval", "demo", str(results), "--metric", "bleu_4", "--references", str(tmp_path / "none.jsonl")])
    err = capsys.readouterr().err
    assert code == 1
    assert "pip install capbench-eval" in err
    assert "pip install ./evaluation" in err
