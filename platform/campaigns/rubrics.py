"""The built-in rubrics of a rating campaign, their scales and wording (docs/human-evaluation.md).

A rubric is a list of dimensions, each rated on an integer scale from `low` to `high` with a
definition shown beside the rating buttons and a word for each end. It is stored with the campaign
(`Campaign.rubric`), so a later change of wording here never rewrites what annotators were shown.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from plumbing.errors import ApplicationError


@dataclass(frozen=True)
class Dimension:
    key: str  # the Judgment dimension its ratings are stored under
    name: str
    definition: str
    low: int = 1
    high: int = 5
    labels: dict[str, str] = field(default_factory=dict)  # "1" -> word shown under the button

    def as_json(self) -> dict:
        return asdict(self)


_FIVE = {"1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "excellent"}

ACCR = (
    Dimension(
        "accuracy",
        "Accuracy",
        "Is everything the caption says true of the image? Wrong objects, attributes, counts, relations "
        "or actions lower it; leaving things out does not.",
        labels={
            "1": "mostly wrong",
            "2": "several errors",
            "3": "one clear error",
            "4": "a small slip",
            "5": "all true",
        },
    ),
    Dimension(
        "completeness",
        "Completeness",
        "Does the caption mention the image's important content: the main objects, what they do and "
        "the setting? Missing the main subject is worst; small details do not count.",
        labels={
            "1": "misses the point",
            "2": "much missing",
            "3": "main subject only",
            "4": "nearly all",
            "5": "complete",
        },
    ),
    Dimension(
        "conciseness",
        "Conciseness",
        "Is the caption free of repetition, filler and guessing beyond what the image shows? A long "
        "caption can be concise if every part says something.",
        labels={"1": "rambling", "2": "much filler", "3": "some filler", "4": "nearly tight", "5": "tight"},
    ),
    Dimension(
        "relevance",
        "Relevance",
        "Does the caption talk about this image, and about what a viewer would find salient in it, "
        "rather than about something else?",
        labels={"1": "another image", "2": "mostly off", "3": "partly", "4": "mostly", "5": "on point"},
    ),
)

THUMB = (
    Dimension(
        "precision",
        "Precision",
        "How much of what the caption says is correct for the image (THumB's precision: errors lower "
        "it, omissions do not).",
        labels=_FIVE,
    ),
    Dimension(
        "recall",
        "Recall",
        "How much of the image's salient content the caption covers (THumB's recall: omissions lower "
        "it, errors do not).",
        labels=_FIVE,
    ),
)

BUILT_IN = {"accr": ACCR, "thumb": THUMB}
RESERVED = frozenset({"mean", "arena"})  # the results' own dimensions (the mean of a rating's, an arena's)
NAMES = {"accr": "ACCR (accuracy, completeness, conciseness, relevance)", "thumb": "THumB (precision, recall)"}


class RubricError(ApplicationError, ValueError):
    """A rubric that cannot be used, in words for the campaign form."""


def rubric_dimensions(name: str, custom: str = "") -> list[Dimension]:
    """A built-in rubric's dimensions, or (`name` "custom") those written one per line as
    `key: definition` (a 1-5 scale). The first dimension is the one gold checks read (a caption of
    another image must rate in its bottom quarter), so a custom rubric should start with one such
    as accuracy or relevance."""
    if name in BUILT_IN:
        return list(BUILT_IN[name])
    if name != "custom":
        raise RubricError(f"no rubric {name!r} (accr, thumb or custom)")
    dimensions: list[Dimension] = []
    for number, line in enumerate(custom.splitlines(), start=1):
        if line.strip():
            dimensions.append(_custom_dimension(number, line, {d.key for d in dimensions}))
    if not dimensions:
        raise RubricError("a custom rubric needs at least one dimension, one per line: `name: definition`")
    if len(dimensions) > 8:
        raise RubricError("a custom rubric has at most 8 dimensions")
    return dimensions


def _custom_dimension(number: int, line: str, taken: set[str]) -> Dimension:
    """A custom rubric's line `key: definition` as a 1-5 dimension (`taken`: the keys above it)."""
    key, colon, definition = line.partition(":")
    key = key.strip().lower().replace(" ", "_")
    if not colon or not key or not definition.strip():
        raise RubricError(f"custom rubric line {number}: write `name: definition`")
    if not key.replace("_", "").isalnum() or len(key) > 30:
        raise RubricError(f"custom rubric line {number}: {key!r} is not a short name of letters and digits")
    if key in RESERVED:
        raise RubricError(f"custom rubric line {number}: {key!r} is a name the results use; call it otherwise")
    if key in taken:
        raise RubricError(f"custom rubric line {number}: {key!r} twice")
    return Dimension(key, key.replace("_", " ").capitalize(), definition.strip(), labels=_FIVE)


def dimension_of(data: dict) -> Dimension:
    return Dimension(**data)


def gold_ceiling(dimension: Dimension) -> float:
    """The highest rating a gold check's decoy (a caption of another image) may get on the rubric's
    first dimension and still pass: the bottom quarter of the scale (2 on 1-5)."""
    return dimension.low + (dimension.high - dimension.low) / 4
