"""FLEUR, CLAIR and G-VEval against their references' way of reading a reply, written out here from
the released code (Yebin46/FLEUR fleur.py, DavidMChan/clair clair.py, ztangaj/gveval scorer.py):
the same replies, token ids and random logits on both sides. Where the reference would crash or
return its fallback 0, CapBench refuses the reply (a failure, never a number); those cases and the
documented deliberate differences are asserted as such."""

import json
import math
import random
import re
from types import SimpleNamespace

import numpy as np
import pytest

from capbench_eval.metrics import CaptionRow
from capbench_eval.metrics.judges.backends import JudgeReply
from capbench_eval.metrics.judges.clair import Clair
from capbench_eval.metrics.judges.fleur import Fleur
from capbench_eval.metrics.judges.gveval import GVEvalAccr, GVEvalCombined
from capbench_eval.metrics.judges.parsing import Token, Unparseable

ROW = CaptionRow("1", "a dog", ("a dog runs",), "unused.jpg")

# ---------------------------------------------------------------------------------------------------
# FLEUR: a small vocabulary whose digits are single tokens (as LLaVA's are), random logits per step.

VOCAB = [*"0123456789", ".", "Score", ":", " ", "</s>", "the", "caption", "is"]
ID = {text: index for index, text in enumerate(VOCAB)}
RATE2TOKEN = {rate: ID[str(rate)] for rate in range(10)}  # the reference's tokenizer.encode(str(s))[-1]


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


def reference_fleur(output_ids: list[int], scores: list[np.ndarray]) -> float | None:
    """fleur.py's reading of one reply: the decoded output (with its "</s>") stripped, the last 4
    characters dropped, every character but digits and dots removed, leading and trailing dots
    removed, float(); outside [0, 1] the row is skipped (None). Then each digit's position is the
    position of its token id in the output (for a repeated id: the second occurrence for a first
    decimal 0 or any second decimal, else the first), read through str(score_check)."""
    outputs = "".join(VOCAB[i] for i in output_ids).strip()
    numbers = re.sub(r"\.+$", "", re.sub(r"^\.+", "", re.sub(r"[^\d\.]", "", outputs[:-4])))
    score_check = float(numbers)
    if score_check < 0 or score_check > 1:
        return None
    ids = np.array(output_ids)

    def where(digit: int, repeated: int) -> int:
        found = np.flatnonzero(ids == RATE2TOKEN[digit])
        return int(found[repeated]) if len(found) > 1 else int(found[0])

    if score_check < 1.0:
        printed = str(score_check)
        first = int(printed[printed.index(".") + 1])
        probs = softmax(scores[where(first, 1 if first == 0 else 0)])
        score = sum(probs[token] * rate * 0.1 for rate, token in RATE2TOKEN.items())
        if len(printed) > 3:
            second = int(printed[printed.index(".") + 2])
            probs2 = softmax(scores[where(second, 1)])
            score += sum(probs2[token] * rate * 0.01 for rate, token in RATE2TOKEN.items())
        return float(score)
    probs = softmax(scores[where(1, 0)])
    return float(0.9 * probs[RATE2TOKEN[0]] + probs[RATE2TOKEN[1]])


def capbench_fleur(output_ids: list[int], scores: list[np.ndarray]) -> float | None:
    """Fleur.parse on the reply the local backend makes of the same generation: tokens up to the end
    token, and at every position the log-probabilities of "0".."9" over the whole vocabulary."""
    kept = output_ids[: output_ids.index(ID["</s>"])]
    logprobs = [np.log(softmax(step)) for step in scores[: len(kept)]]
    tokens = [Token(VOCAB[i], float(lp[i]), {}) for i, lp in zip(kept, logprobs, strict=True)]
    watched = [{d: float(lp[ID[d]]) for d in "0123456789"} for lp in logprobs]
    reply = JudgeReply("".join(VOCAB[i] for i in kept), tokens, watched=watched)
    try:
        return Fleur().parse(ROW, reply)[0]
    except Unparseable:
        return None


FLEUR_REPLIES = [
    "0.70",  # the audit's case: no second-decimal term
    "0.7",
    "0.75",
    "0.05",
    "0.0",
    "0.00",
    "0.700",
    "0.66",
    "0.77",
    "0.705",  # a second decimal 0 followed by a non-zero digit: counted
    "0.0500",
    "0.10",
    "1.0",
    "1.00",
    "Score: 0.85",
    "Score: 0.9",
    "1.5",  # above 1: the reference skips the row; CapBench refuses it
]


def generation(reply: str, rng) -> tuple[list[int], list[np.ndarray]]:
    pieces = ["Score", ":", " "] if reply.startswith("Score: ") else []
    pieces += list(reply.removeprefix("Score: ")) + ["</s>"]
    ids = [ID[piece] for piece in pieces]
    return ids, [rng.normal(0, 2.5, len(VOCAB)) for _ in ids]


@pytest.mark.parametrize("reply", FLEUR_REPLIES)
def test_fleur_smoothing_equals_the_reference_on_random_logits(reply):
    rng = np.random.default_rng(sum(map(ord, reply)))
    for _ in range(20):
        ids, scores = generation(reply, rng)
        expected = reference_fleur(ids, scores)
        ours = capbench_fleur(ids, scores)
        if expected is None:
            assert ours is None  # skipped by the reference, refused by us
        else:
            assert ours == pytest.approx(expected, abs=1e-9)


def test_fleur_differs_from_the_reference_only_where_its_repeated_digit_rule_misreads():
    """Documented difference: for "0.00y" the reference takes the second "0" token (the first
    decimal) for the second decimal too; we read each decimal at its own position."""
    rng = np.random.default_rng(3)
    ids, scores = generation("0.005", rng)
    ours = capbench_fleur(ids, scores)
    first, second = softmax(scores[2]), softmax(scores[3])
    assert ours == pytest.approx(
        sum(first[RATE2TOKEN[d]] * d * 0.1 + second[RATE2TOKEN[d]] * d * 0.01 for d in range(10))
    )
    misread = sum(first[RATE2TOKEN[d]] * d * 0.1 + first[RATE2TOKEN[d]] * d * 0.01 for d in range(10))
    assert reference_fleur(ids, scores) == pytest.approx(misread)


def test_fleur_instruction_is_the_released_one_byte_for_byte(tmp_path):
    from PIL import Image

    picture = tmp_path / "dog.png"
    Image.new("RGB", (8, 8)).save(picture)
    released = (  # fleur.py's f-string
        "Your task is to evaluate and rate the caption on a scale of 0.0 to 1.0 based on the given Grading "
        "Criteria. (Print Real Number Score ONLY)\n\nGrading Criteria:\n\n0.0: The caption does not describe the "
        "image at all.\n1.0: The caption accurately and clearly describes the image.\n\nCaption: {candidate}\n\n"
        "Score(Choose a rating from 0.0 to 1.0):"
    )
    for candidate in ["a dog", "Ein Hund läuft über die Straße 犬 {x} " + "word " * 200]:
        prompt = Fleur().request(CaptionRow("1", candidate, (), str(picture)), 0).prompt
        assert prompt == released.format(candidate=candidate)


# ---------------------------------------------------------------------------------------------------
# CLAIR: the prompt and the reply.

CLAIR_TEMPLATE = (  # clair.py's _CLAIR_PROMPT: each placeholder on a line of its own, a newline at the end
    "You are trying to tell if a candidate set of captions is describing the same image as a reference set of "
    "captions.\nCandidate set:\n{candidate_statements}\nReference set:\n{target_statements}\nOn a precise scale "
    "from 0 to 100, how likely is it that the candidate set is describing the same image as the reference set? (JSON "
    'format, with a key "score", value between 0 and 100, and a key "reason" with a string value.)\n'
)


def reference_clair_prompt(candidates: list[str], targets: list[str]) -> str:
    """clair.py's prompt: each caption as "- {c}\\n", joined, put into the template with str.format."""
    return CLAIR_TEMPLATE.format(
        candidate_statements="".join(f"- {c}\n" for c in candidates),
        target_statements="".join(f"- {t}\n" for t in targets),
    )


CRASH = "crash"


def reference_clair(response: str):
    """clair.py's reading of one response: the first "{" … next "}" as JSON, float(its "score");
    on a JSON error, a missing key or no "{": the first number of the response, ×100 below 1; no
    number: None (retried, then 0). float() failing on the score is not caught there: CRASH."""
    try:
        parsed = "{" + response.split("{")[1].split("}")[0] + "}"
        data = json.loads(parsed)
        try:
            score = float(data["score"])
        except (ValueError, TypeError, OverflowError):
            return CRASH
        return score / 100
    except (json.JSONDecodeError, KeyError, IndexError):
        found = re.findall(r"\d*\.?\d+", response)
        if not found:
            return None
        score = float(found[0])
        return (score * 100 if score < 1 else score) / 100


def capbench_clair(response: str):
    try:
        return Clair().parse(ROW, JudgeReply(response, []))[0]
    except Unparseable:
        return None


CLAIR_REPLIES = [
    '{"score": 72, "reason": "same dog"}',
    'Sure. {"score": 72, "reason": "same dog"} and then {"score": 10, "reason": "no"}',  # two objects: the first
    '{score: 40} {"score": 90}',  # the first is no JSON: the first number of the reply
    '{"reason": "no score here"} 55',
    '{"score": "85", "reason": "a numeric string"}',
    '{"score": "1e2"}',
    "score: 0.85",
    "I would say .5 or so",
    '{"score": 0.5}',  # a JSON score is not scaled
    '{"score": 7',  # cut off: "{" … end, closed with "}"
    '{"score": 80, "reason": {"nested": 1}}',
    '{"score": 65.5, "reason": "a}b"}',
    "The {first} brace, then 30",
    'Score: ٨٥ {"reason": "Eastern Arabic digits"}',
    '```json\n{\n  "score": 85,\n  "reason": "Both describe a dog."\n}\n```',
    '{"score": 60, "reason": "Ünïcödé 犬 ' + "long " * 2000 + '"}',
]


@pytest.mark.parametrize("response", CLAIR_REPLIES)
def test_clair_reads_a_reply_as_the_reference_does(response):
    expected = reference_clair(response)
    assert expected not in (None, CRASH)
    assert 0 <= expected <= 1
    assert capbench_clair(response) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("response", "reference"),
    [
        ('{"score": "high"} then {"score": 40}', CRASH),  # float("high") raises in the reference
        ('{"score": null} 40', CRASH),
        ('{"score": [1, 2]}', CRASH),
        ("I refuse.", None),  # no number: retried, then 0 in the reference
        ('{"score": 140, "reason": "x"}', 1.4),  # outside 0–100: passed on unclipped by the reference
        ('{"score": -5}', -0.05),
        ('{"score": NaN}', "nan"),
        ('{"score": true}', 0.01),  # a boolean: read as 1 by the reference, not a rating to us
    ],
)
def test_clair_refuses_where_the_reference_crashes_or_gives_no_rating(response, reference):
    expected = reference_clair(response)
    if reference == "nan":
        assert math.isnan(expected)
    else:
        assert expected == (pytest.approx(reference) if isinstance(reference, float) else reference)
    assert capbench_clair(response) is None


def test_clair_agrees_with_the_reference_on_random_replies():
    """Replies assembled at random from JSON-ish pieces: wherever the reference gives a number in
    [0, 1] ours is the same; everywhere else (a crash, no number, out of range) ours refuses."""
    pieces = [
        "{",
        "}",
        '"score": ',
        '"reason": "r", ',
        "42",
        "0.3",
        '"7"',
        "null",
        "true",
        " text ",
        ",",
        '{"score": 12}',
        '{"score": 99.5, "reason": "ok"}',
        "150",
        "\n",
        ".",
        "犬",
    ]
    generator = random.Random(11)
    compared = 0
    for _ in range(600):
        response = "".join(generator.choice(pieces) for _ in range(generator.randint(1, 9)))
        expected, ours = reference_clair(response), capbench_clair(response)
        if expected in (None, CRASH) or not 0 <= expected <= 1:  # (NaN is not in [0, 1] either)
            assert ours is None, response
        else:
            assert ours == pytest.approx(expected, abs=1e-12), response
            compared += 1
    assert compared > 200


def test_clair_prompt_is_the_reference_prompt_byte_for_byte():
    long = "a caption with braces {0} {x} {} and a {{double}} pair? " + "word " * 120 + "Ünïcödé 犬"
    cases = [("a dog", ("a dog runs", "a puppy")), (long, ("Ein Hund läuft", long)), ("one", ("two",))]
    for candidate, references in cases:
        prompt = Clair().request(CaptionRow("1", candidate, references), 0).prompt
        assert prompt == reference_clair_prompt([candidate], list(references))
        assert prompt.endswith("with a string value.)\n")


# ---------------------------------------------------------------------------------------------------
# G-VEval: the expectation over the numeric top-5 alternatives after "$" (ACCR: after α β ψ δ).


def alternative(token: str, logprob: float):
    return SimpleNamespace(token=token, logprob=logprob)


def reference_expectation(content: list, marker: str) -> float | None:
    """scorer.py: the first token containing the marker, the NEXT position's top_logprobs, each
    alternative whose text is exactly "0".."100" as exp(logprob) (a later equal text overwrites),
    normalised over the 101 values, Σ int(i)·w. A failure (no marker, nothing after it, every
    weight 0) raises in the reference and the reply is asked again: None here."""
    try:
        for index, item in enumerate(content):
            if marker in item.token:
                top = content[index + 1].top_logprobs
                break
        else:
            return None
        weights = {str(i): 0.0 for i in range(101)}
        for alt in top:
            if alt.token in weights:
                weights[alt.token] = math.exp(alt.logprob)
        total = sum(weights.values())
        return sum(int(i) * w / total for i, w in weights.items())
    except (IndexError, ZeroDivisionError):
        return None


def as_reply(content: list) -> JudgeReply:
    """What the OpenAI-compatible backend makes of a response's logprobs.content."""
    tokens = [
        Token(item.token, item.logprob, {alt.token: alt.logprob for alt in item.top_logprobs}) for item in content
    ]
    return JudgeReply("".join(item.token for item in content), tokens)


ALTERNATIVES = ["85", " 85", "90", "100", "101", "007", "abc", "8", "0", "50", "$", "α"]


def random_content(generator: random.Random, markers: list[str]) -> list:
    content = [
        SimpleNamespace(token=word, logprob=-0.1, top_logprobs=[alternative(word, -0.1)])
        for word in ["The", " caption", " is", " fine", "."]
    ]
    for marker in markers:
        content.append(SimpleNamespace(token=f" {marker}", logprob=-0.2, top_logprobs=[alternative(marker, -0.2)]))
        top = [
            alternative(generator.choice(ALTERNATIVES), generator.choice([-1000.0, generator.uniform(-8, 0)]))
            for _ in range(5)
        ]
        content.append(SimpleNamespace(token=top[0].token, logprob=top[0].logprob, top_logprobs=top))
        content.append(SimpleNamespace(token=f"{marker}.", logprob=-0.1, top_logprobs=[]))
    return content


def test_gveval_expectation_equals_the_reference_on_random_alternatives():
    generator = random.Random(7)
    compared = refused = 0
    for _ in range(400):
        content = random_content(generator, ["$"])
        if generator.random() < 0.05:
            content = content[:-2]  # the reply ends right after "$"
        expected = reference_expectation(content, "$")
        try:
            ours = GVEvalCombined().parse(ROW, as_reply(content))[0]
        except Unparseable:
            ours = None
        if expected is None:
            assert ours is None
            refused += 1
        else:
            assert ours == pytest.approx(expected, abs=1e-9)
            compared += 1
    assert compared > 200
    assert refused > 5


def test_gveval_accr_equals_the_reference_mean_of_its_four_expectations():
    generator = random.Random(8)
    compared = 0
    for _ in range(200):
        content = random_content(generator, ["α", "β", "ψ", "δ"])
        found = [reference_expectation(content, marker) for marker in "αβψδ"]
        try:
            ours = GVEvalAccr().parse(ROW, as_reply(content))[0]
        except Unparseable:
            ours = None
        if None in found:
            assert ours is None
        else:
            assert ours == pytest.approx(sum(found) / 4, abs=1e-9)
            compared += 1
    assert compared > 40
