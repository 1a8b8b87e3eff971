"""BERTScore on a tiny random RoBERTa (17 layers, the `roberta_store` fixture) where roberta-large lives:
greedy matching by hand, and the bert-score package as the oracle on the same model."""

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow, MetricUnavailable
from capbench_eval.metrics.embedding.bertscore import BASELINE, BertScore, greedy_match, token_embedder
from tests.evaluation.metrics.embedding.bertscore_oracle import package_best, prf


def test_greedy_matching_by_hand():
    a, b, c = np.eye(3)
    candidate = np.stack([a, b])
    reference = np.stack([a, c])
    p, r, f = greedy_match(candidate, reference, np.array([0.5, 0.5]), np.array([0.5, 0.5]))
    assert (p, r) == (0.5, 0.5)
    assert f == pytest.approx(0.5)
    assert greedy_match(candidate, reference, np.zeros(2), np.array([0.5, 0.5])) == (0.0, 0.0, 0.0)


def rows():
    return [
        CaptionRow("0", "a dog runs on grass", ("a dog runs on the grass", "the cat sleeps")),
        CaptionRow("1", "children on a bench", ("two children sit on a bench",)),
        CaptionRow("2", "a man in the rain", ("a woman holds an umbrella in the rain", "people walk")),
        CaptionRow("3", "", ("a man rides a bike",)),
    ]


def test_matches_the_bert_score_package_on_the_same_model(roberta_store):
    result = BertScore().score(rows())
    expected = package_best(roberta_store, rows()[:3])
    assert prf(result.details[:3]) == pytest.approx(prf(expected), abs=1e-5)  # P, R, F each maximised alone
    assert result.details[3] == {"P": 0.0, "R": 0.0, "F": 0.0}  # empty candidate


def test_batched_equals_one_by_one_and_rescaling(roberta_store):
    together = BertScore().score(rows()).scores
    assert together == pytest.approx([BertScore().score([row]).scores[0] for row in rows()], abs=1e-6)
    rescaled = BertScore(rescale=True).score(rows()[:1]).details[0]
    plain = BertScore().score(rows()[:1]).details[0]
    assert rescaled["F"] == pytest.approx((plain["F"] - BASELINE["F"]) / (1 - BASELINE["F"]))


def test_without_the_model_bertscore_refuses(tmp_path, monkeypatch):
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "empty"))
    token_embedder.cache_clear()
    assert "roberta-large is not in the model store" in BertScore().availability().reason
    with pytest.raises(MetricUnavailable):
        BertScore().score(rows())
    token_embedder.cache_clear()


def test_layers_above_17_are_never_run(model_store, monkeypatch):
    """A deeper model (roberta-large has 24 layers) keeps its first 17 only; the scores are layer 17's
    of the whole model, as bert-score's `num_layers=17` gives them."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from tests.fixtures.models import tiny_roberta

    folder = model_store / "hf" / "roberta-large"
    tiny_roberta(folder, layers=19)
    token_embedder.cache_clear()
    try:
        _, model = BertScore().embedder._load()
        assert len(model.encoder.layer) == 17
        tokenizer = AutoTokenizer.from_pretrained(folder, add_prefix_space=True)
        whole = AutoModel.from_pretrained(folder).eval()
        row = rows()[1]

        def layer17(text):
            ids = tokenizer(text, return_tensors="pt")
            with torch.no_grad():
                hidden = whole(**ids, output_hidden_states=True).hidden_states[17][0]
            return (hidden / hidden.norm(dim=-1, keepdim=True)).numpy()

        candidate, reference = layer17(row.candidate), layer17(row.references[0])
        weights = [np.r_[0.0, np.full(len(x) - 2, 1 / (len(x) - 2)), 0.0] for x in (candidate, reference)]
        expected = greedy_match(candidate, reference, *weights)
        assert BertScore().score([row]).details[0] == pytest.approx(dict(zip("PRF", expected, strict=True)), abs=1e-5)
    finally:
        token_embedder.cache_clear()


def test_texts_are_tokenised_in_one_call_as_one_encode_each(roberta_store):
    embedder = BertScore().embedder
    tokenizer, _ = embedder._load()
    texts = ["", "   ", "  a dog runs  ", "Ünïcödé café, naïve!", "word " * 700]
    one_by_one = [
        tokenizer.encode(text.strip(), add_special_tokens=True, truncation=True, max_length=tokenizer.model_max_length)
        for text in texts
    ]
    assert embedder.token_ids(texts) == one_by_one
    assert len(one_by_one[-1]) == tokenizer.model_max_length  # the long one was cut


def test_out_of_memory_halves_the_batch_and_keeps_it(roberta_store, monkeypatch):
    import torch

    expected = BertScore().score(rows()).scores
    embedder = BertScore().embedder
    assert embedder.batch == 256
    real, sizes = embedder._layer, []

    def tight(model, pad_id, ids):  # a device that holds two texts at once
        sizes.append(len(ids))
        if len(ids) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(model, pad_id, ids)

    monkeypatch.setattr(embedder, "_layer", tight)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    embedder.batch = 8
    texts = {row.candidate for row in rows()} | {ref for row in rows() for ref in row.references}
    again = BertScore().score(rows()).scores
    assert embedder.batch == 2
    assert sizes[:3] == [min(8, len(texts)), 4, 2]
    assert set(sizes[2:]) <= {1, 2}
    assert again == pytest.approx(expected, abs=1e-6)
