"""The local backend on a tiny random LLaVA loaded through transformers from the store: the same
reply structure as the endpoint (tokens, log-probabilities, watched digits), batching that changes
nothing, caching, and VisCE²/FLEUR running on it end to end."""

import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from capbench_eval.backbones.catalogue import CATALOGUE
from capbench_eval.metrics import CaptionRow, MetricUnavailable, get
from capbench_eval.metrics.judges.backends import JudgeParams, JudgeRequest, LocalVLM, ReplyCache

DIGITS = tuple("0123456789")


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "grey.png"
    Image.fromarray(np.full((30, 40, 3), 100, dtype=np.uint8)).save(path)
    return str(path)


def test_replies_carry_tokens_logprobs_and_watched_digits_and_batching_changes_nothing(llava_store, picture):
    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"], batch=4)
    image = Path(picture).read_bytes()
    requests = [
        JudgeRequest("rate the caption a dog", image, "image/png", watch=DIGITS),
        JudgeRequest("rate the caption from 0 to 100: two children sit on a bench", image, "image/png"),
    ]
    params = JudgeParams(max_tokens=5, top_logprobs=3)
    together = backend.complete(requests, params)
    alone = [backend.complete([request], params)[0] for request in requests]
    for a, b in zip(together, alone, strict=True):
        assert a.text == b.text
        assert [t.text for t in a.tokens] == [t.text for t in b.tokens]
        assert [t.logprob for t in a.tokens] == pytest.approx([t.logprob for t in b.tokens], abs=1e-4)
    reply = together[0]
    assert len(reply.tokens) == reply.completion_tokens == 5
    assert reply.prompt_tokens > 16
    assert all(1 <= len(token.top) <= 3 and token.logprob <= 0 for token in reply.tokens)  # (ids may decode alike)
    assert reply.tokens[0].logprob == pytest.approx(max(reply.tokens[0].top.values()))  # greedy: the top token
    assert len(reply.watched) == 5 and set(reply.watched[0]) == set(DIGITS)
    assert sum(math.exp(v) for v in reply.watched[0].values()) < 1
    assert together[1].watched == [{}] * 5


def test_local_replies_are_cached(llava_store, picture, tmp_path):
    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"])
    cache = ReplyCache(tmp_path / "cache")
    request = JudgeRequest("rate the caption a cat", Path(picture).read_bytes(), "image/png")
    first = backend.complete([request], JudgeParams(max_tokens=4), cache)[0]
    second = backend.complete([request], JudgeParams(max_tokens=4), cache)[0]
    assert second.cached and second.text == first.text and len(list((tmp_path / "cache").rglob("*.json"))) == 1


@pytest.mark.slow  # two judges generating on a tiny LLaVA: four seconds
def test_visce2_and_fleur_run_on_the_local_model_and_record_what_they_read(llava_store, picture):
    rows = [CaptionRow("1", "a dog", (), picture), CaptionRow("2", "a grey square", (), picture)]
    visce2 = get("visce2").score(rows)
    for value, detail in zip(visce2.scores, visce2.details, strict=True):
        assert detail["draws"] >= 1 and "reply" in detail and detail["prompt_tokens"] > 0
        if math.isnan(value):  # a random model: a reply without a number in 0–100 is a failure, not 0
            assert detail["error"].startswith("unparseable reply")
        else:
            assert 0 <= value <= 100 and detail["visual_context"]
    fleur = get("fleur").score(rows)
    for value, detail in zip(fleur.scores, fleur.details, strict=True):
        assert detail["draws"] == 1  # greedy on a local model: drawing again gives the same reply
        assert math.isnan(value) == ("error" in detail)


def test_qwen2_vl_answers_like_llava_and_batching_changes_nothing(qwen_store, picture):
    backend = LocalVLM(CATALOGUE["Qwen/Qwen2-VL-7B-Instruct"], batch=4)
    image = Path(picture).read_bytes()
    requests = [
        JudgeRequest("rate the caption a dog", image, "image/png", watch=DIGITS),
        JudgeRequest(
            "rate the caption from 0 to 100: two children sit on a bench and a man rides a bike", image, "image/png"
        ),
        JudgeRequest("rate the caption the cat sleeps"),
    ]  # no picture, in the same batch
    params = JudgeParams(max_tokens=4, top_logprobs=3)
    together = backend.complete(requests, params)
    alone = [backend.complete([request], params)[0] for request in requests]
    for a, b, request in zip(together, alone, requests, strict=True):
        assert a.text == b.text
        assert [t.text for t in a.tokens] == [t.text for t in b.tokens]
        assert [t.logprob for t in a.tokens] == pytest.approx([t.logprob for t in b.tokens], abs=1e-4)
        assert a.prompt_tokens == b.prompt_tokens == backend.prompt_tokens(request)
    assert together[0].prompt_tokens > together[2].prompt_tokens  # the picture's merged patches are in the prompt
    assert len(together[0].watched[0]) == 10
    assert together[0].model == "Qwen/Qwen2-VL-7B-Instruct"


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_a_judge_runs_on_the_model_its_settings_name(qwen_store, picture, monkeypatch):
    monkeypatch.setenv("CAPBENCH_VISCE2_MODEL", "Qwen/Qwen2-VL-7B-Instruct")
    metric = get("visce2")
    assert metric.config()["backend"].startswith("transformers:Qwen/Qwen2-VL-7B-Instruct@")
    result = metric.score([CaptionRow("1", "a dog", (), picture)])
    assert result.details[0]["model"] == "Qwen/Qwen2-VL-7B-Instruct"
    assert result.details[0]["visual_context"] is not None
    monkeypatch.setenv("CAPBENCH_FLEUR_MODEL", "roberta-large")
    fleur = get("fleur")
    availability = fleur.availability()
    assert not availability.available
    assert "CAPBENCH_FLEUR_MODEL='roberta-large' is not a vision-language model" in availability.reason
    assert "Qwen/Qwen2-VL-7B-Instruct" in availability.reason
    with pytest.raises(MetricUnavailable, match="CAPBENCH_FLEUR_MODEL"):
        fleur.estimate([CaptionRow("1", "a dog", (), picture)])


def test_out_of_memory_halves_the_batch_keeps_the_size_and_loses_no_request(llava_store, picture, monkeypatch):
    import torch

    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"], batch=8)
    assert LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"]).batch == 32  # the default, measured on an H100
    image = Path(picture).read_bytes()
    requests = [JudgeRequest(f"rate the caption number {i}", image, "image/png") for i in range(7)]
    real, sizes = backend._generate, []

    def tight(part, params):  # a device that holds three requests at once
        sizes.append(len(part))
        if len(part) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(part, params)

    monkeypatch.setattr(backend, "_generate", tight)
    params = JudgeParams(max_tokens=3)
    replies = backend.complete(requests, params)
    assert sizes == [7, 3, 3, 1]
    assert backend.batch == 3  # halved from the 7 that failed, then kept
    assert all(
        reply.text == alone.text for reply, alone in zip(replies, [real([r], params)[0] for r in requests], strict=True)
    )
    sizes.clear()
    backend.complete(requests[:3], JudgeParams(max_tokens=2))
    assert sizes == [3]


def test_an_error_other_than_out_of_memory_fails_its_batch_only(llava_store, picture, monkeypatch):
    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"], batch=2)
    image = Path(picture).read_bytes()
    requests = [JudgeRequest(f"rate caption {i}", image, "image/png") for i in range(4)]
    real = backend._generate

    def broken_first(part, params):
        if part[0] is requests[0]:
            raise RuntimeError("a bad picture")
        return real(part, params)

    monkeypatch.setattr(backend, "_generate", broken_first)
    replies = backend.complete(requests, JudgeParams(max_tokens=2))
    assert [type(reply).__name__ for reply in replies] == ["JudgeFailed", "JudgeFailed", "JudgeReply", "JudgeReply"]
    assert "RuntimeError: a bad picture" in str(replies[0])
    assert backend.batch == 2
