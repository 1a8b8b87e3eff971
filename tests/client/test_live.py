"""A researcher's day with the `capbench` command against a live server and a real worker: sign in
(the token saved 0600), submit and watch the scoring to the end, read the results card, the board as
CSV and every per-caption score (cursor pages followed), download the candidates and upload a metric's
scores for them, and see a bad upload refused with its file and line; the Python API once."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import time
from collections import Counter

import pytest
import requests
from rest_framework.authtoken.models import Token

from capbench_client import Client, cli, config
from catalog.models import Item
from submissions.models import Submission
from workbench.models import MetricSubmission

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.usefixtures("live_server_connections_closed", "fresh_page_memory", "fresh_rate_limits"),
]

PASSWORD = "correct horse battery staple 9"


def test_a_researchers_day_on_the_command_line(
    live_server, workers, demo_dataset, django_user_model, tmp_path, monkeypatch, capsys
):
    started = time.monotonic()
    base = live_server.url
    workers.start("client", CAPBENCH_METRIC_PLUGINS=None)  # the real metrics only
    django_user_model.objects.create_user("ada", password=PASSWORD)

    def capbench(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        """The command run in this process: its exit status, stdout and stderr."""
        capsys.readouterr()
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))  # not a terminal: the password is a line
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    # Sign in once: the server and token are saved, readable by the user only, and used from now on.
    code, out, err = capbench("--url", base, "login", "--username", "ada", stdin=PASSWORD + "\n")
    assert code == 0, err
    path = config.config_path()
    assert str(path) in out
    assert config.load() == {"url": base, "token": Token.objects.get(user__username="ada").key}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700

    # Submit, wait for the scoring, read the results table.
    items = list(Item.objects.filter(dataset=demo_dataset).order_by("id"))
    results = tmp_path / "results.json"
    captions = [{"image_id": item.external_id, "caption": " ".join(item.references[0].split()[:6])} for item in items]
    results.write_text(json.dumps(captions))
    code, out, err = capbench(
        "submit", "demo", str(results), "--name", "Ada's captioner", "--metric", "rouge_l", "--metric", "bleu_4",
        "--public", "--wait", "--poll", "0.2",
    )  # fmt: skip
    submission = Submission.objects.get()
    assert code == 0, out + err + workers.logs()
    assert submission.status == "done" and submission.owner.username == "ada" and submission.is_public
    assert submission.method_name == "Ada's captioner"
    assert sorted(submission.metrics) == ["bleu_4", "rouge_l"]
    assert out.splitlines()[0] == f"Submission {submission.pk} (queued): {base}/submissions/{submission.pk}/"
    assert "200/200 scored  2/2 metrics finished  (done)" in err.splitlines()[-1]  # the last progress line
    table = out[out.index("metric") :]
    assert "ROUGE-L" in table
    assert "BLEU-4" in table
    assert " of " in table

    # The results card as JSON: a number, interval and rank for each metric asked for.
    code, out, err = capbench("results", str(submission.pk), "--json")
    assert code == 0, err
    card = json.loads(out)
    assert card["submission"] == submission.pk
    assert card["final"] is True
    assert card["status"] == "done"
    assert card["dataset"] == "demo"
    assert card["system"] == submission.system.slug
    lines = {line["metric"]: line for line in card["results"]}
    assert {"rouge_l", "bleu_4"} <= set(lines)
    for line in (lines["rouge_l"], lines["bleu_4"]):
        assert 0 < line["value"] < 1
        assert line["points"] == pytest.approx(100 * line["value"])
        assert line["low"] <= line["value"] <= line["high"]  # the interval on the value's scale
        assert line["low_points"] <= line["points"] <= line["high_points"]  # and in points
        assert 1 <= line["rank"] <= line["ranked"]

    # The board as CSV: our system is a row with the same number.
    code, out, err = capbench("board", "demo", "--csv", "--output", str(tmp_path / "board.csv"))
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "board.csv").open(encoding="utf-8")))
    ours = next(row for row in rows if row["system"] == submission.system.slug)
    assert ours["name"] == "Ada's captioner"
    assert float(ours["rouge_l"]) == pytest.approx(lines["rouge_l"]["points"], abs=1e-3)
    code, out, err = capbench("board", "demo")
    assert code == 0, err
    head, *_, ours_line = [line for line in out.splitlines() if "Ada's captioner" in line or "ROUGE-L" in line]
    assert "ROUGE-L" in head
    assert f"{lines['rouge_l']['points']:.1f}" in ours_line  # the metrics with numbers
    assert f"({lines['rouge_l']['low_points']:.1f}–{lines['rouge_l']['high_points']:.1f})" in ours_line  # its interval

    # Every per-caption score of the system, 30 a page: the cursor followed to the end.
    code, out, err = capbench(
        "scores", "--dataset", "demo", "--system", submission.system.slug, "--page-size", "30",
        "--output", str(tmp_path / "scores.jsonl"),
    )  # fmt: skip
    assert code == 0, err
    scores = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert Counter(score["metric"] for score in scores) == {"rouge_l": 100, "bleu_4": 100}
    assert len({score["id"] for score in scores}) == 200
    assert {score["item"] for score in scores} == {item.external_id for item in items}
    assert "200 scores written" in err

    # The candidates of the meta-evaluation set, scored here by our own metric, uploaded back.
    candidates_file = tmp_path / "candidates.jsonl"
    code, out, err = capbench("candidates", "demo", "--output", str(candidates_file))
    assert code == 0, err
    candidates = [json.loads(line) for line in candidates_file.read_text().splitlines()]
    assert candidates and {"caption_id", "candidate", "references"} <= set(candidates[0])
    assert len({row["caption_id"] for row in candidates}) == len(candidates)
    ours_scores = tmp_path / "length.jsonl"
    ours_scores.write_text(
        "".join(
            json.dumps({"caption_id": row["caption_id"], "score": len(row["candidate"])}) + "\n" for row in candidates
        )
    )
    code, out, err = capbench("metric-upload", "Caption length", "--scores", f"demo={ours_scores}", "--reference-free")
    assert code == 0, err
    uploaded = MetricSubmission.objects.get()
    assert out.startswith(f"Metric submission {uploaded.pk} ({uploaded.metric.slug}): ")
    assert uploaded.owner.username == "ada" and not uploaded.is_public

    # A results file naming an image the dataset lacks: refused, the file and line named, nothing stored.
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        "".join(json.dumps({"image_id": item.external_id, "caption": "a dog"}) + "\n" for item in items[:2])
        + json.dumps({"image_id": "no-such-image.jpg", "caption": "a cat"})
        + "\n"
    )
    code, out, err = capbench("submit", "demo", str(bad))
    assert code == 1
    assert err.startswith("capbench: the server refused the request (POST /api/v1/submissions/):"), err
    assert any(
        line.startswith("  results: bad.jsonl: line 3, field 'image_id': 'no-such-image.jpg'")
        for line in err.splitlines()
    ), err
    assert "Traceback" not in err
    assert Submission.objects.count() == 1

    # The same file again: the submission it already is.
    code, out, err = capbench("submit", "demo", str(results))
    assert code == 1 and f"already submitted as submission {submission.pk}" in err, err

    # The Python API, anonymous: the public board has the system with the card's number, and the
    # scores come 30 a page (7 pages for 200).
    pages: list[str] = []
    session = requests.Session()
    session.hooks["response"].append(lambda response, *args, **kwargs: pages.append(response.url))
    api = Client(base, session=session)
    board = api.board("demo")
    system = next(row for row in board["systems"] if row["system"] == submission.system.slug)
    assert system["scores"]["rouge_l"]["value"] == pytest.approx(lines["rouge_l"]["value"])
    pages.clear()
    assert len(list(api.scores(dataset="demo", system=submission.system.slug, page_size=30))) == 200
    assert len(pages) == 7 and all("cursor=" in page for page in pages[1:])
    assert time.monotonic() - started < 120
