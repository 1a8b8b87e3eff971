"""G-VEval, CLAIR, VisCE² and FLEUR against the fake endpoint: the prompts they send, the numbers
they read, failures kept as failures with the reply, and what the score detail records."""

import math

import numpy as np
import pytest
from PIL import Image

from capbench_eval.metrics import CaptionRow, MetricUnavailable, get
from capbench_eval.metrics.judges.gveval import references_text
from tests.fixtures.fake_openai import completion, ok, words


@pytest.fixture
def picture(tmp_path):
    path = tmp_path / "dog.jpg"
    Image.fromarray(np.full((30, 40, 3), 120, dtype=np.uint8)).save(path)
    return str(path)


def scored(text_before, alternatives, after="$."):
    return completion(
        words(text_before) + [("$", {}), (max(alternatives, key=alternatives.get), alternatives), (after, {})]
    )


def test_references_are_formatted_as_released():
    assert references_text(["a dog", "a brown dog", "dog runs"]) == "'a dog'; 'a brown dog'; 'dog runs"


def test_gveval_combined_sends_image_and_references_and_reads_the_expectation(judge_server, picture):
    judge_server.then(ok(scored("Accurate and concise. The final score is", {"80": 0.6, "90": 0.4})))
    row = CaptionRow("1", "a dog on grass", ("a dog runs", "a brown dog"), picture)
    result = get("gveval_combined").score([row])
    assert result.scores == [pytest.approx(84.0)]
    detail = result.details[0]
    assert detail["distribution"] == pytest.approx({"80": 0.6, "90": 0.4})
    assert detail["reply"].startswith("Accurate and concise.")
    assert detail["prompt_tokens"] == 120
    content = judge_server.requests[0]["messages"][0]["content"]
    assert "Reference captions:\n'a dog runs'; 'a brown dog\n\nImage is attached" in content[0]["text"]
    assert "Generated captions:\na dog on grass\n" in content[0]["text"]
    assert content[1]["image_url"]["detail"] == "low"
    assert content[1]["image_url"]["url"].startswith("data:image/jpeg")
    assert judge_server.requests[0]["temperature"] == 1.0


def test_gveval_ref_only_sends_no_picture_as_a_system_message(judge_server, picture):
    judge_server.then(ok(scored("Fine. The final score is", {"70": 1.0})))
    result = get("gveval_ref_only").score([CaptionRow("1", "a cat", ("a cat sleeps",), picture)])
    assert result.scores == [70.0]
    [message] = judge_server.requests[0]["messages"]
    assert message["role"] == "system"
    assert "Reference captions:\n'a cat sleeps" in message["content"]


def test_an_unparseable_reply_is_drawn_again_then_recorded_as_a_failure(judge_server, picture):
    judge_server.default = lambda body: ok(completion(words("I would rather not give a number.")))
    result = get("gveval_ref_free").score([CaptionRow("1", "a cat", (), picture)])
    assert math.isnan(result.scores[0])
    assert result.corpus is None
    detail = result.details[0]
    assert detail["draws"] == 3
    assert "unparseable reply: the reply has no '$'" in detail["error"]
    assert detail["reply"] == "I would rather not give a number."
    assert len(judge_server.requests) == 3


def test_a_second_draw_that_has_a_number_is_used(judge_server, picture):
    judge_server.then(ok(completion(words("no number"))), ok(scored("The final score is", {"60": 1.0})))
    result = get("gveval_ref_free").score([CaptionRow("1", "a cat", (), picture)])
    assert result.scores == [60.0]
    assert result.details[0]["draws"] == 2
    assert "error" not in result.details[0]


def test_rows_without_what_the_judge_needs_fail_alone(judge_server, picture):
    judge_server.default = lambda body: ok(scored("The final score is", {"50": 1.0}))
    rows = [CaptionRow("1", "a cat", ("a cat",), None), CaptionRow("2", "a dog", ("a dog",), picture)]
    result = get("gveval_combined").score(rows)
    assert math.isnan(result.scores[0])
    assert "needs the image" in result.details[0]["error"]
    assert result.scores[1] == 50.0
    assert result.corpus == 50.0


def test_accr_on_a_video_reads_four_dimensions_from_the_composite(judge_server, tmp_path):
    import av

    path = tmp_path / "clip.mp4"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for index in range(6):
            container.mux(
                stream.encode(av.VideoFrame.from_ndarray(np.full((32, 32, 3), 40 * index, np.uint8), format="rgb24"))
            )
        container.mux(stream.encode(None))
    tokens = []
    for marker, alternatives in (
        ("α", {"90": 1.0}),
        ("β", {"60": 0.5, "80": 0.5}),
        ("ψ", {"70": 1.0}),
        ("δ", {"100": 1.0}),
    ):
        tokens += [
            (f" score is {marker}", {}),
            (max(alternatives, key=alternatives.get), alternatives),
            (f"{marker}.", {}),
        ]
    judge_server.then(ok(completion(tokens)))
    result = get("gveval_accr").score([CaptionRow("1", "a man cooks", ("a man is cooking",), str(path))])
    assert result.details[0]["dimensions"] == pytest.approx(
        {"accuracy": 90, "completeness": 70, "conciseness": 70, "relevance": 100}
    )
    assert result.scores == [pytest.approx((90 + 70 + 70 + 100) / 4)]
    image = judge_server.requests[0]["messages"][0]["content"][1]["image_url"]
    assert image["detail"] == "high"
    assert image["url"].startswith("data:image/png;base64,")
    import base64
    import io

    sent = Image.open(io.BytesIO(base64.b64decode(image["url"].split(",", 1)[1])))
    assert sent.size == (1536, 512)


def test_clair_asks_at_temperature_zero_and_reports_on_0_to_1(judge_server):
    judge_server.then(ok(completion(words('{"score": 65, "reason": "similar scene"}'))))
    result = get("clair").score([CaptionRow("1", "a dog", ("a dog runs", "a puppy"))])
    assert result.scores == [0.65]
    assert result.details[0]["reason"] == "similar scene"
    sent = judge_server.requests[0]
    assert sent["temperature"] == 0.0
    assert sent["max_tokens"] == 1024
    prompt = sent["messages"][0]["content"]  # the released code's layout: a blank line after each list
    assert "Candidate set:\n- a dog\n\nReference set:\n- a dog runs\n- a puppy\n\nOn a precise scale" in prompt
    assert prompt.endswith("with a string value.)\n")


def test_visce2_extracts_the_context_once_per_image_and_rates_with_it(judge_server, picture, monkeypatch):
    monkeypatch.setenv("CAPBENCH_VISCE2_BACKEND", "api")

    def answer(body):
        text = body["messages"][0]["content"][0]["text"]
        if text.startswith("Analyze the uploaded image"):
            return ok(completion(words("Object 1: a gray square")))
        return ok(completion(words("Rating: 1000" if "odd" in text else "Rating: 85. Good.")))

    judge_server.default = answer
    rows = [
        CaptionRow("1", "a gray square", (), picture),
        CaptionRow("2", "a grey box", (), picture),
        CaptionRow("3", "an odd one", (), picture),
    ]
    result = get("visce2").score(rows)
    contexts = [r for r in judge_server.requests if r["messages"][0]["content"][0]["text"].startswith("Analyze")]
    assert len(contexts) == 1  # once per image
    ratings = [r["messages"][0]["content"][0]["text"] for r in judge_server.requests[1:]]
    assert len(ratings) == 3 + 2  # the odd one is drawn 3 times
    rating = next(text for text in ratings if "\na gray square\n" in text)
    assert "Candidate caption:\nCandidate:\na gray square\n" in rating
    assert "Visual Context:\nObject 1: a gray square\n" in rating
    assert result.scores[:2] == [85.0, 85.0]
    assert result.details[0]["reference_parse"] == 85.0
    assert result.details[0]["visual_context"].startswith("Object 1")
    assert math.isnan(result.scores[2])
    assert "outside 0–100" in result.details[2]["error"]
    assert result.details[2]["visual_context"].startswith("Object 1")  # kept for a failure too (the item page)
    assert judge_server.requests[1]["temperature"] == 0.2
    assert judge_server.requests[1]["seed"] == 0
    before = len(judge_server.requests)
    get("visce2").score(rows[:2])  # every reply cached now
    assert len(judge_server.requests) == before


def test_fleur_smooths_with_the_digit_alternatives_of_an_endpoint(judge_server, picture, monkeypatch):
    monkeypatch.setenv("CAPBENCH_FLEUR_BACKEND", "api")
    judge_server.then(ok(completion([("0", {}), (".", {}), ("8", {"8": 0.6, "7": 0.4})])))
    result = get("fleur").score([CaptionRow("1", "a gray square", (), picture)])
    assert result.scores == [pytest.approx(0.1 * (8 * 0.6 + 7 * 0.4))]
    assert result.details[0]["printed"] == "0.8"
    assert judge_server.requests[0]["top_logprobs"] == 20


def test_without_an_endpoint_the_api_judges_refuse_and_say_why(monkeypatch, tmp_path):
    monkeypatch.delenv("CAPBENCH_JUDGE_BASE_URL", raising=False)
    monkeypatch.delenv("CAPBENCH_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for slug in ("gveval_combined", "clair"):
        assert "no judge endpoint is configured" in get(slug).availability().reason
        with pytest.raises(MetricUnavailable):
            get(slug).score([CaptionRow("1", "a", ("b",))])
    monkeypatch.setenv("CAPBENCH_MODEL_DIR", str(tmp_path / "empty"))
    assert "llava-hf/llava-1.5-13b-hf is not in the model store" in get("visce2").availability().reason


def test_editing_a_prompt_or_the_model_makes_a_new_version(monkeypatch):
    from capbench_eval.metrics.judges import prompts

    before = get("gveval_combined").config_hash()
    monkeypatch.setenv("CAPBENCH_JUDGE_MODEL", "gpt-4o-mini")
    assert get("gveval_combined").config_hash() != before
    monkeypatch.delenv("CAPBENCH_JUDGE_MODEL")
    monkeypatch.setattr(prompts, "prompt_sha", lambda name: "edited")
    monkeypatch.setattr("capbench_eval.metrics.judges.base.prompt_sha", lambda name: "edited")
    assert get("gveval_combined").config_hash() != before
