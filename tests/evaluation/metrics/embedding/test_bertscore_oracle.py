"""BERTScore against the bert-score package on the same tiny random RoBERTa: special tokens written in
captions ("<s>", "</s>": bert-score weighs every occurrence of their ids 0), captions over the model's
length and outside ASCII."""

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow
from capbench_eval.metrics.embedding.bertscore import BASELINE, BertScore
from tests.evaluation.metrics.embedding.bertscore_oracle import package_best, package_score, prf


def test_special_tokens_written_in_a_caption_weigh_nothing_as_in_the_package(roberta_store):
    """bert-score weighs 0 every token whose id is <s>'s or </s>'s, wherever it stands: a caption
    holding the text "<s>" or "</s>" is tokenised to those ids. Also over the model's length (cut)
    and outside ASCII; <pad> and <mask> written in a caption weigh 1 on both sides."""
    tokenizer, _ = BertScore().embedder._load()
    special = [
        CaptionRow("0", "a dog </s> runs on the grass", ("a dog runs on the grass", "<s> the cat sleeps")),
        CaptionRow("1", "<s>two children</s> sit on a bench </s>", ("two children sit on a bench",)),
        CaptionRow("2", "a man <pad> in the <mask> rain", ("a woman holds an umbrella in the rain </s>",)),
        CaptionRow("3", "un chien court sur l'herbe, 犬が走る — Ünïcödé", ("a dog runs on the grass", "un chien")),
        CaptionRow("4", "a dog runs on the grass " * 40, ("the cat sleeps on a red sofa " * 30, "a dog")),
    ]
    ids = BertScore().embedder.token_ids([row.candidate for row in special])
    assert ids[0].count(tokenizer.sep_token_id) == 2
    assert ids[1].count(tokenizer.cls_token_id) == 2
    assert len(ids[4]) == tokenizer.model_max_length  # cut
    result = BertScore().score(special)
    assert prf(result.details) == pytest.approx(prf(package_best(roberta_store, special)), abs=1e-5)
    rescaled = BertScore(rescale=True).score(special[:2]).details
    for ours, plain in zip(rescaled, result.details[:2], strict=True):
        assert ours["F"] == pytest.approx((plain["F"] - BASELINE["F"]) / (1 - BASELINE["F"]))


def test_a_caption_of_special_tokens_only_scores_f_0_as_in_the_package(roberta_store):
    """All its weights are 0: bert-score divides by their sum (P is NaN) and sets the NaN F to 0; we
    give P = R = F = 0, as for an empty caption (the same F, the score)."""
    row = CaptionRow("0", "</s>", ("a dog runs",))
    assert BertScore().score([row]).details[0] == {"P": 0.0, "R": 0.0, "F": 0.0}
    p, _, f = package_score(roberta_store, [row.candidate], list(row.references))
    assert np.isnan(p.item())
    assert f.item() == 0.0
