"""Annotator quality: answers, skips, time per answer, gold checks passed, and who is flagged
(docs/human-evaluation.md, "Gold checks")."""

from __future__ import annotations

import statistics
from collections import defaultdict

from campaigns.models import Annotation, Campaign
from campaigns.rubrics import dimension_of
from campaigns.selectors import counted_q


def annotator_quality(campaign: Campaign) -> dict[int, dict]:
    """Per annotator (user id): answers, skips, median and total seconds, gold answered and passed,
    and whether they are flagged."""
    rubric = [dimension_of(data) for data in campaign.rubric]
    ceiling = rubric[0].low + (rubric[0].high - rubric[0].low) / 4 if rubric else None
    found: dict[int, dict] = defaultdict(lambda: {"answers": 0, "skips": 0, "seconds": [], "gold": 0, "gold_passed": 0})
    tasks = (
        Annotation.objects.filter(counted_q(), campaign=campaign)
        .exclude(status=Annotation.Status.SHOWN)
        .values_list("annotator_id", "status", "decoy_id", "caption_id", "values", "winner", "shown_at", "answered_at")
    )
    for user_id, status, decoy, left, values, winner, shown_at, answered_at in tasks:
        entry = found[user_id]
        if status == Annotation.Status.SKIPPED:
            entry["skips"] += 1
            entry["gold"] += decoy is not None  # a skipped gold check counts as failed: skipping is no way out
            continue
        entry["answers"] += 1
        if answered_at is not None:
            entry["seconds"].append((answered_at - shown_at).total_seconds())
        if decoy is None:
            # django-stubs 6.1 types values_list() of a nullable foreign key as never None
            continue  # type: ignore[unreachable]
        entry["gold"] += 1
        if campaign.is_arena:
            entry["gold_passed"] += winner == ("right" if decoy == left else "left")
        elif rubric and ceiling is not None:
            entry["gold_passed"] += (values or {}).get(rubric[0].key, rubric[0].high) <= ceiling
    quality = {}
    for user_id, entry in found.items():
        seconds = entry.pop("seconds")
        accuracy = entry["gold_passed"] / entry["gold"] if entry["gold"] else None
        quality[user_id] = {
            **entry,
            "gold_accuracy": accuracy,
            "median_seconds": statistics.median(seconds) if seconds else None,
            "flagged": accuracy is not None
            and entry["gold"] >= campaign.gold_minimum
            and accuracy < campaign.gold_pass,
        }
    return quality


def flagged_annotators(campaign: Campaign) -> set[int]:
    """The user ids of the annotators the campaign's gold checks flag (none before the first gold
    check: the assignment asks at every task)."""
    if not Annotation.objects.filter(campaign=campaign, decoy__isnull=False).exists():
        return set()
    return {user for user, entry in annotator_quality(campaign).items() if entry["flagged"]}
