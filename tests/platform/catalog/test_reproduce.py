"""The reproduction command recomputes each published table beside the papers' values: Flickr8k's
Kendall tables match to the printed rounding (±0.05; CF METEOR tau-b is 22.269 against 22.3),
Pascal-50S reports K reference draws with their seeds, mean and spread, and a dataset without a
transcribed table (MSVD-Eval) prints ours with intervals and says so.

Each command runs as a user types it (`python manage.py reproduce …`), in another process; the
tests read what it printed."""

import re
import subprocess
import sys

import pytest

from tests.judgment_data import ROOT

pytestmark = pytest.mark.slow

CELL = re.compile(
    r"^(?P<metric>\S+)\s+(?P<dimension>.+?)\s+(?P<statistic>tau_b|tau_c|pearson|accuracy)\s+"
    r"(?P<ours>-?\d+\.\d+) \[\s*(?P<low>-?\d+\.\d+),\s*(?P<high>-?\d+\.\d+)\]\s+"
    r"(?P<paper>\S+)\s+(?P<delta>\S+)\s+(?P<inside>\S+)\s+(?P<match>\S+)"
)


def _printed(dataset: str, folder, *options: str, seconds: float = 300) -> str:
    """What `manage.py reproduce` printed; `seconds` is its limit, several times what it takes here."""
    command = [sys.executable, "manage.py", "reproduce", dataset, str(folder), *options]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=seconds)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _cells(out: str) -> dict[tuple[str, str, str], dict]:
    found = [CELL.match(line) for line in out.splitlines()]
    return {(m["metric"], m["dimension"], m["statistic"]): m.groupdict() for m in found if m}


@pytest.mark.parametrize(
    "dataset, expected, seconds",
    [
        (
            "flickr8k-expert",
            {"bleu_1": 32.2, "bleu_4": 30.6, "rouge_l": 32.1, "cider_d": 43.6, "meteor": 41.5},
            300,
        ),
        ("flickr8k-cf", {"bleu_1": 17.9, "bleu_4": 16.9, "rouge_l": 19.9, "cider_d": 24.6, "meteor": 22.3}, 600),
    ],
    ids=["flickr8k-expert", "flickr8k-cf"],
)
def test_published_kendall_values_are_reproduced(judgment_data, dataset, expected, seconds):
    out = _printed(dataset, judgment_data / "flickr8k", "--replicates", "200", seconds=seconds)
    cells = _cells(out)
    for slug, tau_b in expected.items():
        cell = cells[(slug, "overall", "tau_b")]
        assert float(cell["paper"]) == tau_b
        assert abs(float(cell["ours"]) - tau_b) <= 0.05 + 0.005, cell  # ours printed to 2 decimals
        assert cell["match"] == "yes" and cell["inside"] == "yes", cell
        assert float(cell["low"]) < float(cell["ours"]) < float(cell["high"])
        assert cells[(slug, "overall", "tau_c")]["match"] == "yes"
    assert "published: Sarto et al." in out
    assert "NO" not in out.split()


def test_pascal_accuracies_are_close_to_the_papers(judgment_data):
    lines = _printed("pascal50s", judgment_data / "pascal50s", "--draws", "2").splitlines()
    fixed = next(line for line in lines if line.startswith("bleu_4") and "fixed draw (file)" in line)
    assert re.findall(r"(\d+\.\d) \(", fixed)[-1] == "74.6"  # mean strict accuracy, the file's own draw
    half = next(line for line in lines if line.startswith("bleu_4") and "ties count half" in line)
    second = next(line for line in lines if line.startswith("bleu_4") and "ties to the 2nd" in line)
    assert float(half.split()[-1]) >= 74.6
    assert float(second.split()[-1]) >= 74.6
    assert any(line.startswith("bleu_4") and "draw (seed 12345)" in line for line in lines)
    assert any(line.startswith("bleu_4") and "draw (seed 12346)" in line for line in lines)
    for slug in ("bleu_4", "cider_d", "meteor"):
        ours = float(next(line for line in lines if line.startswith(slug) and "mean of the draws" in line).split()[-1])
        spread = float(next(line for line in lines if line.startswith(slug) and "sd of the draws" in line).split()[-1])
        paper = float(next(line for line in lines if line.startswith(slug) and "paper" in line).split()[-1])
        assert abs(ours - paper) < 2.0, (slug, ours, paper)
        assert 0 <= spread < 2.0
        delta = next(line for line in lines if line.startswith(slug) and "Δ (mean of draws − paper)" in line)
        assert float(delta.split()[-1]) == pytest.approx(ours - paper, abs=0.051)
        within = next(line for line in lines if line.startswith(slug) and "paper within mean ± 2 sd" in line)
        gap = abs(ours - paper) - 2 * spread  # from the printed, rounded mean and sd
        assert within.split()[-1] == "yes" if gap < -0.1 else within.split()[-1] == "no" if gap > 0.1 else True


def test_a_dataset_without_a_transcribed_table_prints_ours_with_intervals(judgment_data):
    out = _printed("msvd-eval", judgment_data / "msvd_eval", "--replicates", "200", "--metrics", "bleu_4,cider_d")
    assert "published: none here" in out
    cells = _cells(out)
    dimensions = {dimension for _, dimension, _ in cells}
    assert len(dimensions) == 4
    assert {statistic for *_, statistic in cells} == {"tau_b", "tau_c"}  # the ACCR dimensions
    for cell in cells.values():
        assert cell["paper"] == "–"
        assert float(cell["low"]) <= float(cell["ours"]) <= float(cell["high"])
