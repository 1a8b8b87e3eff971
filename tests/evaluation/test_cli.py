"""`python -m capbench_eval`: listing metrics and scoring a JSONL file, as a separate process."""

import json
import subprocess
import sys

import pytest

from capbench_eval import cli, metrics
from capbench_eval.metrics import CaptionRow, Metric, MetricResult, get


def _run(repo_root, *args):
    return subprocess.run([sys.executable, "-m", "capbench_eval", *args], cwd=repo_root, capture_output=True, text=True)


def test_metrics_list_names_each_metric_and_its_availability(repo_root):
    result = _run(repo_root, "metrics", "list")
    lines = dict(line.split("\t") for line in result.stdout.splitlines())
    assert result.returncode == 0
    assert lines["bleu_4"] == "available"
    assert lines["cider_d"] == "available"


def test_score_writes_one_line_per_row_in_input_order(repo_root, tmp_path):
    rows = [
        {"id": "b", "candidate": "A dog runs.", "references": ["A dog is running.", "The dog runs fast."]},
        {"id": "a", "candidate": "Two cats.", "references": ["Two cats sleep."]},
        {"id": "c", "candidate": "A red car.", "references": ["A car that is red.", "Red car parked."]},
    ]
    source, target = tmp_path / "rows.jsonl", tmp_path / "scores.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _run(repo_root, "score", "--metric", "cider_d", "--input", str(source), "--output", str(target))
    assert result.returncode == 0, result.stderr
    written = [json.loads(line) for line in target.read_text().splitlines()]
    expected = get("cider_d").score([CaptionRow(r["id"], r["candidate"], tuple(r["references"])) for r in rows])
    assert [w["id"] for w in written] == ["b", "a", "c"]
    assert [w["score"] for w in written] == pytest.approx(expected.scores, abs=1e-12)
    assert "3/3" in result.stderr


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"id": "a", "candidate": 5}', "line 2: field 'candidate'"),
        ('{"id": "y", "candidate": "c", "references": "r"}', "line 2: field 'references'"),
        ('{"id": "x", "candidate": "c", "references": ["r"]}', "line 2: field 'id': 'x' appears twice"),
        ("{not json", "line 2: invalid JSON"),
    ],
)
def test_bad_input_names_line_and_field_and_writes_nothing(repo_root, tmp_path, line, message):
    source, target = tmp_path / "rows.jsonl", tmp_path / "scores.jsonl"
    source.write_text('{"id": "x", "candidate": "a dog", "references": ["a dog"]}\n' + line + "\n")
    result = _run(repo_root, "score", "--metric", "rouge_l", "--input", str(source), "--output", str(target))
    assert result.returncode == 2
    assert message in result.stderr
    assert not target.exists()


def test_an_unknown_metric_or_model_is_a_user_error(tmp_path, capsys):
    source = tmp_path / "rows.jsonl"
    source.write_text('{"id": "a", "candidate": "a dog"}\n')
    assert cli.main(["score", "--metric", "nope", "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err
    assert cli.main(["models", "fetch", "no/such-model"]) == 2
    assert "unknown model 'no/such-model' (known: " in capsys.readouterr().err


def test_a_key_error_inside_a_metric_is_not_taken_for_a_bad_slug(tmp_path, monkeypatch):
    class Broken(Metric):
        slug, name, family = "broken", "Broken", "test"

        def score(self, rows, context=None) -> MetricResult:
            return {}["missing"]  # a bug, not a user error

    monkeypatch.setattr(metrics, "get", lambda slug: Broken())
    source = tmp_path / "rows.jsonl"
    source.write_text('{"id": "a", "candidate": "a dog"}\n')
    with pytest.raises(KeyError, match="missing"):
        cli.main(["score", "--metric", "broken", "--input", str(source), "--output", str(tmp_path / "out")])
