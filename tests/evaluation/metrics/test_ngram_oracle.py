"""BLEU-1..4, METEOR, ROUGE-L and CIDEr-D equal pycocoevalcap's per-caption scores to 1e-9 on every row of
Flickr8k-Expert (16,992) and Flickr8k-CF (47,830), tokenisation included; corpus values too.

pycocoevalcap's side is computed in another process while the suite runs (ngram_oracle.py, started by
tests/background.py); ours is computed here."""

import json

import pytest

from evaluation.metrics import get
from tests.evaluation.metrics.ngram_oracle import flickr8k_rows

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "source_format, count",
    [
        pytest.param("flickr8k-expert", 16992, marks=pytest.mark.background("ngram-oracle:flickr8k-expert")),
        pytest.param("flickr8k-cf", 47830, marks=pytest.mark.background("ngram-oracle:flickr8k-cf")),
    ],
)
def test_ngram_metrics_equal_pycocoevalcap_on_every_row(judgment_data, source_format, count, background):
    rows = flickr8k_rows(source_format, judgment_data / "flickr8k")
    assert len(rows) == count
    assert background.result.returncode == 0, background.result.stderr[-3000:]
    oracle = json.loads(background.output.read_text())
    assert oracle["rows"] == count and len(oracle["scores"]) == 7
    for slug, (expected_rows, expected_corpus) in oracle["scores"].items():
        result = get(slug).score(rows)
        worst = max(abs(a - b) for a, b in zip(result.scores, expected_rows, strict=True))
        assert worst <= 1e-9, f"{slug}: largest per-caption difference {worst}"
        assert result.corpus == pytest.approx(expected_corpus, abs=1e-9), slug
