"""BLEU-1..4, METEOR, ROUGE-L and CIDEr-D equal pycocoevalcap's per-caption scores to 1e-9 on every row of
Flickr8k-Expert (16,992) and on every fourth row of Flickr8k-CF (11,958 of 47,830: pycocoevalcap's
pure-Python scorers take minutes on all of them, and its published Kendall table is reproduced on
every row by tests/platform/catalog/test_reproduce.py), tokenisation included; corpus values too.
Our METEOR runs on each file's cut of the paraphrase table (the index built first; a JVM of this
test's own, whatever earlier tests started), pycocoevalcap's on the whole table.

pycocoevalcap's side runs in another process (ngram_oracle.py, one METEOR JVM for both files; about a
minute here) while ours is computed here, so the two take one core each."""

import json
import subprocess
import sys

import pytest

from capbench_eval.metrics import get
from capbench_eval.metrics.ngram.meteor import MeteorProcess
from tests.evaluation.metrics.ngram_oracle import flickr8k_rows
from tests.judgment_data import ROOT

pytestmark = pytest.mark.slow

SLUGS = ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider_d", "meteor")
SETS = {"flickr8k-expert": (1, 16992), "flickr8k-cf": (4, 11958)}  # every n-th row, and how many that is
SECONDS = 600  # the oracle's limit, several times what it takes here


def test_ngram_metrics_equal_pycocoevalcap_row_by_row(judgment_data, meteor_index, tmp_path, monkeypatch):
    meteor = MeteorProcess()  # starts on a cut, as any process's first batches do
    monkeypatch.setattr(get("meteor"), "process", meteor)
    output = tmp_path / "oracle.json"
    folder = judgment_data / "flickr8k"
    command = [sys.executable, "-m", "tests.evaluation.metrics.ngram_oracle", str(folder), str(output)]
    command += [f"{source_format}:{every}" for source_format, (every, _) in SETS.items()]
    oracle_process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ours = {}
        for source_format, (every, count) in SETS.items():
            rows = flickr8k_rows(source_format, folder, every)
            assert len(rows) == count
            ours[source_format] = {slug: get(slug).score(rows) for slug in SLUGS}
            assert "-a" in meteor._process.args  # scored on a cut
        _, stderr = oracle_process.communicate(timeout=SECONDS)
    finally:
        meteor.close()
        if oracle_process.poll() is None:
            oracle_process.kill()
            oracle_process.communicate()
    assert oracle_process.returncode == 0, stderr[-3000:]
    written = json.loads(output.read_text())
    assert sorted(written) == sorted(SETS)
    for source_format, (_, count) in SETS.items():
        oracle = written[source_format]
        assert oracle["rows"] == count
        assert sorted(oracle["scores"]) == sorted(SLUGS)
        for slug, (expected_rows, expected_corpus) in oracle["scores"].items():
            got = ours[source_format][slug]
            worst = max(abs(a - b) for a, b in zip(got.scores, expected_rows, strict=True))
            assert worst <= 1e-9, f"{source_format} {slug}: largest per-caption difference {worst}"
            assert got.corpus == pytest.approx(expected_corpus, abs=1e-9), f"{source_format} {slug}"
