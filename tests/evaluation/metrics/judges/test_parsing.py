"""Reading numbers out of judge replies, on hand-computed cases."""

import math

import pytest

from capbench_eval.metrics.judges.parsing import (
    Token,
    Unparseable,
    accr_scores,
    clair_score,
    expected_after_marker,
    first_integer,
    fleur_smoothed,
    strict_rating,
)


def token(text, **alternatives):
    top = {k.removeprefix("n"): math.log(p) for k, p in alternatives.items()}
    return Token(text, top.get(text, 0.0), top)


def test_expected_score_renormalises_the_numeric_alternatives_after_the_first_dollar():
    tokens = [
        token("The"),
        token(" score is $"),
        token("80", n80=0.5, n90=0.2, n100=0.1, abc=0.2),
        token("$."),
        token(" $"),
        token("5", n5=1.0),
    ]
    found = expected_after_marker(tokens, "$")
    # kept: 80 (.5), 90 (.2), 100 (.1) → renormalised over .8
    assert found.value == pytest.approx((80 * 0.5 + 90 * 0.2 + 100 * 0.1) / 0.8)
    assert found.distribution == pytest.approx({80: 0.625, 90: 0.25, 100: 0.125})
    assert found.position == 2


def test_tokens_that_are_not_exactly_0_to_100_are_dropped():
    tokens = [token("$"), token("85", n85=0.6, n101=0.2, **{"n 85": 0.1, "n085": 0.1})]
    assert expected_after_marker(tokens, "$").distribution == {85: 1.0}


def test_missing_marker_or_number_is_unparseable_not_zero():
    with pytest.raises(Unparseable, match="no '\\$'"):
        expected_after_marker([token("I cannot rate this.")], "$")
    with pytest.raises(Unparseable, match="no number among"):
        expected_after_marker([token("$"), token("high", high=0.9, low=0.1)], "$")
    with pytest.raises(Unparseable, match="ends right after"):
        expected_after_marker([token("score $")], "$")


def test_accr_reads_each_dimension_after_its_own_letter():
    tokens = [
        token(" is α"),
        token("90", n90=1.0),
        token("α."),
        token(" is β"),
        token("60", n60=0.5, n70=0.5),
        token("β."),
        token(" is ψ"),
        token("80", n80=1.0),
        token("ψ. is δ"),
        token("100", n100=1.0),
    ]
    found = accr_scores(tokens)
    assert {k: v.value for k, v in found.items()} == pytest.approx(
        {"accuracy": 90, "completeness": 65, "conciseness": 80, "relevance": 100}
    )


def test_first_integer_is_the_released_parse_and_strict_is_ours():
    assert first_integer("Rating: 85/100") == 85
    assert first_integer("There are 5 objects; rating 90") == 5  # the released parse takes the stray 5
    assert first_integer("1000") == 1000  # unclipped
    assert first_integer("no idea") == 0  # none → 0 in the release
    assert strict_rating("Rating: 85/100") == 85
    with pytest.raises(Unparseable, match="outside"):
        strict_rating("1000")
    with pytest.raises(Unparseable, match="no number"):
        strict_rating("no idea")


def test_clair_reads_json_then_a_bare_number():
    assert clair_score('Sure. {"score": 72, "reason": "same dog"} ok') == (0.72, "same dog")
    assert clair_score("score: 0.85") == (pytest.approx(0.85), "")
    assert clair_score('{"score": 30} {"score": 90}') == (0.3, "")  # the first object, as the reference
    assert clair_score('{score: 30} {"score": 90}') == (0.3, "")  # not JSON: the reply's first number
    assert clair_score("Score 55. Reason: same dog") == (0.55, "same dog")
    with pytest.raises(Unparseable, match="not a number"):
        clair_score('{"score": "high"} then 40')  # the reference's float() raises here
    with pytest.raises(Unparseable):
        clair_score('{"score": 140, "reason": "x"}')
    with pytest.raises(Unparseable):
        clair_score("I refuse.")


def test_fleur_smoothing_on_one_and_two_decimals_and_on_one_point_zero():
    tokens = [Token("0", 0, {}), Token(".", 0, {}), Token("7", 0, {}), Token("5", 0, {})]
    first = {"7": math.log(0.5), "8": math.log(0.3), "6": math.log(0.2)}
    second = {"5": math.log(0.6), "0": math.log(0.4)}
    smoothed = fleur_smoothed(tokens, [{}, {}, first, second])
    assert smoothed.value == pytest.approx(0.1 * (7 * 0.5 + 8 * 0.3 + 6 * 0.2) + 0.01 * (5 * 0.6))
    assert smoothed.printed == "0.75"
    one = [Token("1", 0, {}), Token(".", 0, {}), Token("0", 0, {})]
    value = fleur_smoothed(one, [{"1": math.log(0.7), "0": math.log(0.2)}, {}, {}]).value
    assert value == pytest.approx(0.9 * 0.2 + 0.7)
    with pytest.raises(Unparseable):
        fleur_smoothed([Token("good", 0, {})], [{}])


def test_fleur_reads_the_decimals_through_float_as_the_reference():
    """str(float("0.70")) is "0.7": a trailing zero adds no second-decimal term; a printed score
    above 1 is refused (the reference skips the row)."""
    tokens = [Token(text, 0, {}) for text in "0.70"]
    first, second = {"7": math.log(0.5), "8": math.log(0.5)}, {"0": math.log(0.6), "5": math.log(0.4)}
    smoothed = fleur_smoothed(tokens, [{}, {}, first, second])
    assert smoothed.value == pytest.approx(0.1 * (7 * 0.5 + 8 * 0.5))
    assert len(smoothed.digit_probabilities) == 1
    tokens = [Token(text, 0, {}) for text in "0.705"]
    assert fleur_smoothed(tokens, [{}, {}, first, second, {}]).value == pytest.approx(0.75 + 0.01 * 5 * 0.4)
    one = [Token(text, 0, {}) for text in "1.00"]
    assert fleur_smoothed(one, [{"1": math.log(0.5)}, {}, {}, {}]).value == pytest.approx(0.5)
    with pytest.raises(Unparseable, match="above 1.0"):
        fleur_smoothed([Token(text, 0, {}) for text in "1.5"], [{}, {}, {}])
