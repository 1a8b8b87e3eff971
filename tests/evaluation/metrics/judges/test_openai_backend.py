"""The OpenAI-compatible backend through the real `openai` client over real HTTP to a local fake:
what is sent, how logprobs come back, rate limits, timeouts, malformed replies, caching, concurrency."""

import base64
import math
import time

import pytest

from capbench_eval.metrics.judges.backends import JudgeFailed, JudgeParams, JudgeRequest, OpenAICompatible, ReplyCache
from tests.fixtures.fake_openai import completion, ok, words

PARAMS = JudgeParams(temperature=1.0, top_logprobs=5)


def backend(server, **options):
    sleeps = []
    judge = OpenAICompatible("gpt-4o-2024-05-13", server.base_url, "test-key", sleep=sleeps.append, **options)
    return judge, sleeps


def test_the_request_carries_the_image_as_a_data_url_and_asks_for_logprobs(judge_server):
    judge_server.then(ok(completion(words("The final score is $") + [("85", {"85": 0.7, "90": 0.3})])))
    judge, _ = backend(judge_server)
    [reply] = judge.complete([JudgeRequest("rate it", b"\x89PNGfake", "image/png", "low")], PARAMS)
    sent = judge_server.requests[0]
    assert sent["model"] == "gpt-4o-2024-05-13"
    assert sent["logprobs"] is True
    assert sent["top_logprobs"] == 5
    assert sent["temperature"] == 1.0
    assert sent["top_p"] == 1.0
    assert sent["n"] == 1
    [message] = sent["messages"]
    assert message["role"] == "user"
    assert message["content"][0] == {"type": "text", "text": "rate it"}
    image = message["content"][1]["image_url"]
    assert image["detail"] == "low"
    assert image["url"] == "data:image/png;base64," + base64.b64encode(b"\x89PNGfake").decode()
    assert reply.text == "The final score is $85"
    assert reply.tokens[-1].top == pytest.approx({"85": math.log(0.7), "90": math.log(0.3)})
    assert (reply.prompt_tokens, reply.completion_tokens) == (120, 6)


def test_without_a_picture_the_prompt_can_go_as_a_system_message(judge_server):
    judge_server.then(ok(completion(words("ok"))))
    judge, _ = backend(judge_server)
    judge.complete([JudgeRequest("judge these references", as_system=True)], PARAMS)
    assert judge_server.requests[0]["messages"] == [{"role": "system", "content": "judge these references"}]


def test_rate_limits_wait_for_retry_after_then_succeed(judge_server):
    limited = (429, {"error": {"message": "slow down", "type": "rate_limit"}}, {"Retry-After": "2"})
    judge_server.then(limited, (429, {"error": {"message": "again"}}, {}), ok(completion(words("fine"))))
    judge, sleeps = backend(judge_server, backoff=0.5)
    [reply] = judge.complete([JudgeRequest("x")], PARAMS)
    assert reply.text == "fine"
    assert len(judge_server.requests) == 3
    assert sleeps == [2.0, 1.0]  # Retry-After, then exponential backoff (0.5·2)


def test_endless_rate_limits_and_server_errors_end_as_failures_not_numbers(judge_server):
    judge_server.default = lambda body: (429, {"error": {"message": "no"}}, {})
    judge, sleeps = backend(judge_server, rate_limit_attempts=4)
    [failed] = judge.complete([JudgeRequest("x")], PARAMS)
    assert isinstance(failed, JudgeFailed) and "rate limited 4 times" in str(failed) and len(sleeps) == 3
    judge_server.default = lambda body: (500, {"error": {"message": "boom"}}, {})
    judge, sleeps = backend(judge_server, error_attempts=3)
    [failed] = judge.complete([JudgeRequest("y")], PARAMS)
    assert isinstance(failed, JudgeFailed) and "InternalServerError 3 times" in str(failed)
    judge_server.default = lambda body: (400, {"error": {"message": "bad image"}}, {})
    [failed] = backend(judge_server)[0].complete([JudgeRequest("z")], PARAMS)
    assert isinstance(failed, JudgeFailed) and "bad image" in str(failed)


def test_a_timeout_is_retried_and_then_reported(judge_server):
    judge_server.delay = 1.5
    judge_server.default = lambda body: ok(completion(words("late")))
    judge, sleeps = backend(judge_server, timeout=0.3, error_attempts=2)
    [failed] = judge.complete([JudgeRequest("x")], PARAMS)
    assert isinstance(failed, JudgeFailed) and "APITimeoutError 2 times" in str(failed)


def test_a_malformed_body_is_a_failure(judge_server):
    judge_server.then(ok({"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}))
    [failed] = backend(judge_server)[0].complete([JudgeRequest("x")], PARAMS)
    assert isinstance(failed, JudgeFailed) and "malformed" in str(failed)


def test_replies_are_cached_by_prompt_model_params_and_draw(judge_server, tmp_path):
    judge_server.default = lambda body: ok(completion(words(f"reply {len(judge_server.requests)}")))
    judge, _ = backend(judge_server)
    cache = ReplyCache(tmp_path / "cache")
    first = judge.complete([JudgeRequest("a"), JudgeRequest("b")], PARAMS, cache)
    again = judge.complete([JudgeRequest("a"), JudgeRequest("b")], PARAMS, cache)
    assert [r.text for r in again] == [r.text for r in first]
    assert all(r.cached for r in again)
    assert len(judge_server.requests) == 2
    judge.complete([JudgeRequest("a", sample=1)], PARAMS, cache)  # another draw: asked
    judge.complete([JudgeRequest("a")], JudgeParams(temperature=0.0), cache)  # other params: asked
    assert len(judge_server.requests) == 4


def test_no_more_requests_in_flight_than_the_concurrency_limit(judge_server):
    judge_server.delay = 0.2
    judge_server.default = lambda body: ok(completion(words("ok")))
    judge, _ = backend(judge_server, concurrency=3)
    started = time.perf_counter()
    replies = judge.complete([JudgeRequest(f"prompt {i}") for i in range(9)], PARAMS)
    assert all(r.text == "ok" for r in replies)
    assert judge_server.most_in_flight == 3
    assert time.perf_counter() - started >= 0.55  # three waves of 0.2 s
