"""Turning a judge's reply into a number (metrics.md §13–16). Every parser either returns a value
with what it was computed from, or raises `Unparseable` naming what was missing: a reply without a
number is a failure, never a 0."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

INTEGER_TOKENS = {str(i): i for i in range(101)}  # "0".."100", exactly
DIGITS = {str(d): d for d in range(10)}


class Unparseable(ValueError):
    """The reply holds no number where the metric reads one."""


@dataclass(frozen=True)
class Token:
    """One generated token, its log-probability and the top alternatives at its position."""

    text: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Expectation:
    value: float
    distribution: dict[int, float]  # renormalised probabilities of the numeric alternatives
    position: int  # index of the token the distribution was read at


def expected_after_marker(tokens: list[Token], marker: str) -> Expectation:
    """G-VEval: the first token whose text contains `marker`; at the NEXT position keep the top
    alternatives that are exactly "0".."100", renormalise exp(logprob) over them, Σ i·p_i."""
    for index, token in enumerate(tokens):
        if marker in token.text:
            if index + 1 >= len(tokens):
                raise Unparseable(f"the reply ends right after {marker!r}")
            following = tokens[index + 1]
            kept = {
                INTEGER_TOKENS[text]: math.exp(logprob)
                for text, logprob in following.top.items()
                if text in INTEGER_TOKENS
            }
            if not kept:
                raise Unparseable(
                    f"no number among the top alternatives after {marker!r} "
                    f"({', '.join(map(repr, following.top)) or 'none given'})"
                )
            total = sum(kept.values())
            if not total:  # every numeric alternative's probability underflows to 0 (the reference divides by 0)
                raise Unparseable(f"the numeric alternatives after {marker!r} all have probability 0")
            distribution = {value: p / total for value, p in sorted(kept.items())}
            return Expectation(sum(value * p for value, p in distribution.items()), distribution, index + 1)
    raise Unparseable(f"the reply has no {marker!r}")


ACCR_MARKERS = {"accuracy": "α", "completeness": "β", "conciseness": "ψ", "relevance": "δ"}


def accr_scores(tokens: list[Token]) -> dict[str, Expectation]:
    """G-VEval ACCR: one expectation per dimension, read after the first token holding its letter."""
    return {name: expected_after_marker(tokens, marker) for name, marker in ACCR_MARKERS.items()}


def first_integer(text: str) -> float:
    """VisCE²'s released parse: the first run of digits, as a number, unclipped; none → 0."""
    match = re.search(r"[0-9]+", text)
    return float(match.group()) if match else 0.0


def strict_rating(text: str, low: float = 0.0, high: float = 100.0) -> float:
    """Our parse: the first number in the reply must lie in [low, high]; no number is a failure."""
    match = re.search(r"-?[0-9]+(?:\.[0-9]+)?", text)
    if not match:
        raise Unparseable("the reply has no number")
    value = float(match.group())
    if not low <= value <= high:
        raise Unparseable(f"the reply's number {match.group()} is outside {low:g}–{high:g}")
    return value


def clair_score(text: str) -> tuple[float, str]:
    """CLAIR, read as the reference reads a reply: from its first "{" to the next "}" (or the next
    "{", as the reference splits on "{"), closed with "}" and parsed as JSON; that object's "score"
    through float() (a number or a numeric string), however many objects follow. When the reply has
    no "{", that text is not JSON or it has no "score": the first number of the whole reply (×100
    when below 1, as the reference does). Returned on 0–1 with the reason.

    Refused (Unparseable) where the reference would crash or say 0: a first object whose score
    float() cannot read (the reference's float() raises), a boolean score (not a rating; the
    reference reads true as 1), no number at all (the reference retries, then returns 0), and a
    score outside 0–100 (the reference passes it on unclipped)."""
    pieces = text.split("{")
    if len(pieces) > 1:
        try:
            data = json.loads("{" + pieces[1].split("}")[0] + "}")
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and "score" in data:
            return _clair_range(_json_score(data["score"])), str(data.get("reason", ""))
    number = re.search(r"\d*\.?\d+", text)
    if not number:
        raise Unparseable("the reply has neither a JSON score nor a number")
    value = float(number.group())
    reason = re.search(r"(?i)reason.*", text)  # the reference's reason outside JSON: the rest of that line
    said = reason.group().strip()[len("reason") :].replace(":", "").strip() if reason else ""
    return _clair_range(value * 100 if value < 1 else value), said


def _json_score(value: object) -> float:
    """float(value) as the reference takes the first object's score; what it cannot read is refused."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise Unparseable(f"the reply's JSON score {value!r} is not a number")
    try:
        return float(value)
    except (ValueError, OverflowError) as error:
        raise Unparseable(f"the reply's JSON score {value!r} is not a number") from error


def _clair_range(value: float) -> float:
    if not 0 <= value <= 100:
        raise Unparseable(f"CLAIR score {value:g} is outside 0–100")
    return value / 100


@dataclass(frozen=True)
class Smoothed:
    value: float
    printed: str
    digit_probabilities: list[dict[int, float]]


def fleur_smoothed(tokens: list[Token], digit_logprobs: list[dict[str, float]]) -> Smoothed:
    """FLEUR: find the printed score ("0.x", "0.xy…" or "1.0") and read its decimals as the
    reference does, through Python's float: `str(float("0.70"))` is "0.7", so trailing zeros are
    dropped and a second decimal counts only when a non-zero digit follows the first ("0.70" and
    "0.700" have one decimal, "0.07" and "0.705" two; digits after the second are ignored). At the
    first decimal digit's position Σ_d p(d)·d·0.1 (p over the whole vocabulary), plus
    Σ_d p(d)·d·0.01 at the second decimal digit's; a printed 1.0 (or 1.00 …) is 0.9·p("0") + p("1")
    at the "1" position, and a printed number above 1 is unparseable (the reference skips the row).
    `digit_logprobs[i]` holds the log-probabilities of "0".."9" at generated position i."""
    text = "".join(token.text for token in tokens)
    match = re.search(r"([01])\.(\d+)", text)
    if not match:
        raise Unparseable("the reply has no score of the form 0.x or 1.0")
    decimals = match.group(2).rstrip("0") or "0"  # the decimals of str(float(printed))
    if match.group(1) == "1" and decimals != "0":
        raise Unparseable(f"the printed score {match.group()} is above 1.0")
    starts, offset = [], 0
    for token in tokens:
        starts.append(offset)
        offset += len(token.text)

    def position(char_index: int) -> int:
        return max(i for i, start in enumerate(starts) if start <= char_index)

    def probabilities(index: int) -> dict[int, float]:
        return {DIGITS[d]: math.exp(lp) for d, lp in digit_logprobs[index].items() if d in DIGITS}

    if match.group(1) == "1":
        p = probabilities(position(match.start(1)))
        return Smoothed(0.9 * p.get(0, 0.0) + p.get(1, 0.0), match.group(), [p])
    first = probabilities(position(match.start(2)))
    value = sum(d * p * 0.1 for d, p in first.items())
    used = [first]
    if len(decimals) > 1:
        second = probabilities(position(match.start(2) + 1))
        value += sum(d * p * 0.01 for d, p in second.items())
        used.append(second)
    return Smoothed(value, match.group(), used)
