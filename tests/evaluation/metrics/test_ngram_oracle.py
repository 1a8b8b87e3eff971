"""BLEU-1..4, METEOR, ROUGE-L and CIDEr-D equal pycocoevalcap's per-caption scores to 1e-9 on every row of
Flickr8k-Expert (16,992) and Flickr8k-CF (47,830), tokenisation included; corpus values too."""

import contextlib
import io

import pytest
from pycocoevalcap.bleu.bleu import Bleu as OracleBleu
from pycocoevalcap.cider.cider import Cider as OracleCider
from pycocoevalcap.meteor.meteor import Meteor as OracleMeteor
from pycocoevalcap.rouge.rouge import Rouge as OracleRouge
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer as OracleTokenizer

from catalog.importers.judgment_rows import judgment_rows
from catalog.importers.registry import read_bundle
from evaluation.metrics import get

pytestmark = pytest.mark.slow


def _rows(shared_data, source_format):
    """One row per judgment, references of the judged item: the CLIPScore/PAC-S protocol."""
    return judgment_rows(read_bundle(source_format, shared_data / "flickr8k")).rows


def _oracle(rows):
    tokenizer = OracleTokenizer()
    gts = tokenizer.tokenize({row.id: [{"caption": ref} for ref in row.references] for row in rows})
    res = tokenizer.tokenize({row.id: [{"caption": row.candidate}] for row in rows})
    with contextlib.redirect_stdout(io.StringIO()):
        bleu_corpus, bleu_rows = OracleBleu(4).compute_score(gts, res)
    rouge_corpus, rouge_rows = OracleRouge().compute_score(gts, res)
    cider_corpus, cider_rows = OracleCider().compute_score(gts, res)
    meteor_corpus, meteor_rows = OracleMeteor().compute_score(gts, res)
    order = {key: index for index, key in enumerate(gts)}
    positions = [order[row.id] for row in rows]
    oracle = {f"bleu_{k + 1}": ([bleu_rows[k][p] for p in positions], bleu_corpus[k]) for k in range(4)}
    oracle["rouge_l"] = ([rouge_rows[p] for p in positions], rouge_corpus)
    oracle["cider_d"] = ([cider_rows[p] for p in positions], cider_corpus)
    oracle["meteor"] = ([meteor_rows[p] for p in positions], meteor_corpus)
    return oracle


@pytest.mark.parametrize("source_format, count", [("flickr8k-expert", 16992), ("flickr8k-cf", 47830)])
def test_ngram_metrics_equal_pycocoevalcap_on_every_row(shared_data, source_format, count):
    rows = _rows(shared_data, source_format)
    assert len(rows) == count
    oracle = _oracle(rows)
    for slug, (expected_rows, expected_corpus) in oracle.items():
        result = get(slug).score(rows)
        worst = max(abs(a - b) for a, b in zip(result.scores, expected_rows, strict=True))
        assert worst <= 1e-9, f"{slug}: largest per-caption difference {worst}"
        assert result.corpus == pytest.approx(expected_corpus, abs=1e-9), slug
