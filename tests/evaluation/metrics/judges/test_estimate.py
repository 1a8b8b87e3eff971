"""Dry-run estimates: OpenAI's picture rule on hand-computed cases, prices, and what G-VEval and
VisCE² would send, counted without sending anything; cached requests cost nothing."""

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from capbench_eval.backbones.catalogue import CATALOGUE
from capbench_eval.metrics import CaptionRow, get
from capbench_eval.metrics.judges.backends import JudgeRequest, LocalVLM, ReplyCache
from capbench_eval.metrics.judges.estimate import image_tokens, price_of, text_tokens
from tests.fixtures.fake_openai import completion, ok, words


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "dog.png"
    Image.fromarray(np.full((30, 40, 3), 120, dtype=np.uint8)).save(path)
    return str(path)


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        ((4000, 3000), "low", 85),
        ((1024, 1024), "high", 85 + 170 * 4),  # scaled to 768×768: 2×2 tiles (OpenAI's own example: 765)
        ((2048, 4096), "high", 85 + 170 * 6),  # 1024×2048, then 768×1536: 2×3 tiles (1105)
        ((1536, 512), "high", 85 + 170 * 3),  # G-VEval's video composite, never scaled up
        ((40, 30), "high", 85 + 170),
    ],
)
def test_picture_tokens_follow_openais_tile_rule(size, detail, tokens):
    assert image_tokens(*size, detail) == tokens


def test_text_is_counted_at_four_characters_a_token():
    assert (text_tokens(""), text_tokens("abcdefgh"), text_tokens("abcdefghi")) == (0, 2, 3)


def test_prices_come_from_the_environment_else_the_list_else_none(monkeypatch):
    assert price_of("gpt-4o-2024-05-13").cost(1_000_000, 100_000) == pytest.approx(5.0 + 1.5)
    assert price_of("my-local-model") is None
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_INPUT", "1")
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_OUTPUT", "2")
    assert price_of("my-local-model").cost(2_000_000, 500_000) == pytest.approx(3.0)
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_OUTPUT", "two dollars")
    with pytest.raises(ValueError, match="CAPBENCH_JUDGE_PRICE_INPUT and _OUTPUT must be numbers"):
        price_of("gpt-4o-2024-05-13")


def test_gveval_estimate_sends_nothing_and_counts_only_what_is_not_cached(judge_server, picture):
    rows = [
        CaptionRow("1", "a dog on grass", ("a dog runs",), picture),
        CaptionRow("2", "a brown dog", ("a dog runs",), picture),
        CaptionRow("3", "no picture here", ("a dog runs",), None),
    ]
    metric = get("gveval_combined")
    before = metric.estimate(rows)
    assert judge_server.requests == []
    prompts = [metric.request(row, 0).prompt for row in rows[:2]]
    assert (before.rows, before.unjudgeable, before.requests, before.cached, before.images) == (3, 1, 2, 0, 2)
    assert before.prompt_tokens == sum(text_tokens(p) + 7 + 85 for p in prompts)  # detail "low": 85 a picture
    assert before.completion_tokens == 300
    assert before.completion_basis.startswith("assumed: 150")
    assert before.cost_usd == pytest.approx((before.prompt_tokens * 5 + 300 * 15) / 1e6)
    assert before.completion_tokens_max is None
    assert before.cost_usd_max is None  # G-VEval sets no max_tokens

    judge_server.then(ok(completion(words("Good. The final score is") + [("$", {}), ("80", {"80": 1.0}), ("$", {})])))
    metric.score(rows[:1])
    after = metric.estimate(rows, observed_completion=(42.0, 10))
    assert (after.requests, after.cached) == (2, 1)
    assert after.prompt_tokens == text_tokens(prompts[1]) + 7 + 85
    assert after.completion_tokens == 42
    assert "mean 42 per reply over 10 earlier" in after.completion_basis


def test_an_unpriced_model_says_how_to_price_it(judge_server, picture, monkeypatch):
    monkeypatch.setenv("CAPBENCH_JUDGE_MODEL", "some-vllm-model")
    found = get("clair").estimate([CaptionRow("1", "a dog", ("a dog runs",), None)])
    assert found.cost_usd is None
    assert "set CAPBENCH_JUDGE_PRICE_INPUT and _OUTPUT" in found.price_basis
    assert (found.requests, found.images, found.completion_tokens, found.completion_tokens_max) == (1, 0, 60, 1024)


@pytest.mark.slow
def test_local_prompt_tokens_are_exactly_what_the_model_is_given(llava_store, picture):
    backend = LocalVLM(CATALOGUE["llava-hf/llava-1.5-13b-hf"])
    for request in [
        JudgeRequest("rate the caption a dog", Path(picture).read_bytes(), "image/png"),
        JudgeRequest("rate the caption from 0 to 100: two children"),
    ]:
        counted = backend.prompt_tokens(request)
        assert counted == backend.complete([request], get("fleur").params)[0].prompt_tokens
    assert backend._loaded is not None


@pytest.mark.slow  # a tiny LLaVA generating every context: six seconds
def test_visce2_estimate_counts_one_context_per_image_and_nothing_once_all_is_cached(llava_store, picture, tmp_path):
    other = tmp_path / "other.png"
    Image.fromarray(np.full((30, 40, 3), 10, dtype=np.uint8)).save(other)
    rows = [
        CaptionRow("1", "a dog", (), picture),
        CaptionRow("2", "a grey square", (), picture),
        CaptionRow("3", "a dark square", (), str(other)),
    ]
    metric = get("visce2")
    before = metric.estimate(rows)
    assert (before.requests, before.cached, before.images, before.unjudgeable) == (5, 0, 5, 0)
    assert before.completion_tokens == 2 * 250 + 3 * 10
    assert before.completion_tokens_max == 5 * 1024
    assert before.cost_usd is None
    assert before.price_basis == "a local model: no per-token price"
    assert before.counting.startswith("exact")
    metric.score(rows)
    after = metric.estimate(rows, cache=ReplyCache())
    assert (after.requests, after.cached, after.prompt_tokens, after.completion_tokens) == (5, 5, 0, 0)


def test_an_endpoint_is_estimated_before_it_is_configured(monkeypatch, tmp_path):
    for name in ("CAPBENCH_JUDGE_BASE_URL", "CAPBENCH_JUDGE_API_KEY", "OPENAI_API_KEY", "CAPBENCH_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CAPBENCH_JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    metric = get("clair")
    assert not metric.availability().available  # it cannot score yet …
    found = metric.estimate([CaptionRow("1", "a dog", ("a dog runs",), None)])
    assert found.requests == 1
    assert found.cost_usd > 0  # … but what it would cost is known
    assert found.price_basis == "OpenAI list price of gpt-4o-2024-05-13"
