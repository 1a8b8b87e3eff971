"""Integrity checks of a captioner submission: made once, at upload (services.submission_create),
over its captions and the dataset's references, and stored on it (`Submission.flags`). A flag warns
readers, it refuses nothing: the submission is scored and ranked like any other, and its results
card, its board row and its system page say what was found (docs/datasets.md §6, "Integrity
checks"). The metric submissions' own checks are workbench/selectors.py's.

Three rules, each over the share of the submission's captions:

- `copies_references`: the caption is one of its image's reference captions, word for word or after
  `normalised` (lower-cased, punctuation dropped, spaces collapsed); flagged from
  `CAPBENCH_FLAG_COPY_SHARE` of the captions up (default 20%);
- `near_empty`: the caption has fewer than two words (once normalised); flagged from
  `CAPBENCH_FLAG_SHORT_SHARE` of the captions up (default 20%);
- `constant`: one caption text (normalised) repeated, making up over half of the captions.

On a hidden test set the copy flag is staff's only (`flags_shown`): who sees it learns how many of
their captions are references, which such a set keeps to staff (catalog.visibility)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

COPIES_REFERENCES = "copies_references"
NEAR_EMPTY = "near_empty"
CONSTANT = "constant"
CONSTANT_SHARE = 0.5  # one text over this share of the captions (and at least twice) is "constant"
SHORT_WORDS = 2  # a caption of fewer words is near-empty

LABELS = {
    COPIES_REFERENCES: "copies references",
    NEAR_EMPTY: "near-empty captions",
    CONSTANT: "one caption for every image",
}

_PUNCTUATION = re.compile(r"[^\w\s]|_")


def normalised(text: str) -> str:
    """A caption as the copy check compares it: lower-cased, punctuation dropped, runs of white
    space made one space, none at either end."""
    return " ".join(_PUNCTUATION.sub("", text.casefold()).split())


def caption_flags(
    captions: Iterable[tuple[str, Sequence[str]]], *, copy_share: float, short_share: float
) -> list[dict]:
    """The flags of a submission whose captions are `captions` (each with its image's references),
    as stored: `{"flag", "share", "threshold"}` (shares of the captions, 0–1), and for a copy
    `exact`, the share copied word for word. Empty when nothing is found (or there are no captions)."""
    total = exact = copied = short = 0
    texts: Counter[str] = Counter()
    for caption, references in captions:
        total += 1
        text = normalised(caption)
        texts[text] += 1
        exact += caption.strip() in {reference.strip() for reference in references}
        copied += text in {normalised(reference) for reference in references}
        short += len(text.split()) < SHORT_WORDS
    if not total:
        return []
    flags = []
    if copied and copied / total >= copy_share:
        flags.append({"flag": COPIES_REFERENCES, "share": _share(copied, total), "threshold": copy_share,
                      "exact": _share(exact, total)})  # fmt: skip
    if short and short / total >= short_share:
        flags.append({"flag": NEAR_EMPTY, "share": _share(short, total), "threshold": short_share})
    most = texts.most_common(1)[0][1]
    if most >= 2 and most / total > CONSTANT_SHARE:
        flags.append({"flag": CONSTANT, "share": _share(most, total), "threshold": CONSTANT_SHARE})
    return flags


def _share(count: int, total: int) -> float:
    return round(count / total, 4)


@dataclass(frozen=True)
class Flag:
    """A stored flag as pages and the API give it: its code, a short label and what it means."""

    flag: str
    share: float
    threshold: float
    exact: float | None = None

    @property
    def label(self) -> str:
        return LABELS.get(self.flag, self.flag.replace("_", " "))

    @property
    def words(self) -> str:
        """What was found, in a sentence (a tooltip on the board, a line on the results card)."""
        share, threshold = _percent(self.share), _percent(self.threshold)
        if self.flag == COPIES_REFERENCES:
            return (
                f"{share} of its captions are a reference caption of their image ({_percent(self.exact or 0)} "
                f"word for word, the rest once lower-cased, punctuation and extra spaces dropped); "
                f"flagged from {threshold}"
            )
        if self.flag == NEAR_EMPTY:
            return f"{share} of its captions have fewer than {SHORT_WORDS} words; flagged from {threshold}"
        if self.flag == CONSTANT:
            return f"one caption text makes up {share} of its captions; flagged above {threshold}"
        return f"{self.label}: {share}"

    def json(self) -> dict:
        return {
            "flag": self.flag,
            "share": self.share,
            "threshold": self.threshold,
            **({"exact": self.exact} if self.exact is not None else {}),
            "words": self.words,
        }


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%" if share * 100 >= 1 or share == 0 else f"{share * 100:.1f}%"


def flags_shown(stored: Sequence[dict] | None, *, references_shown: bool) -> list[Flag]:
    """The stored flags a viewer may read: all of them, less the copy flag where the dataset's
    references are hidden from them (catalog.visibility.references_visible)."""
    return [
        Flag(found["flag"], found["share"], found["threshold"], found.get("exact"))
        for found in stored or ()
        if references_shown or found["flag"] != COPIES_REFERENCES
    ]
