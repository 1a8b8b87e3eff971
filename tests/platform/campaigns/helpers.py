"""Answering campaign tasks through the real services, as an annotator would; a live campaign
answered so by three annotators."""

from __future__ import annotations

import itertools
import random

from django.contrib.auth import get_user_model

from campaigns.models import Annotation, Campaign
from campaigns.rubrics import ACCR
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next


def rate(task: Annotation, user, value: int | dict) -> Annotation:
    """Answer a rating task: every dimension `value`, or the values given."""
    values = value if isinstance(value, dict) else {d["key"]: value for d in task.campaign.rubric}
    return annotation_answer(annotation_id=task.pk, annotator=user, values=values)


def until_none(campaign: Campaign, user, answer, limit: int = 1000) -> list[Annotation]:
    """Ask for tasks and answer each (`answer(task)` -> values dict or arena winner) until none is left."""
    done = []
    for _ in range(limit):
        task = task_next(campaign=campaign, annotator=user)
        if task is None:
            return done
        found = answer(task)
        if campaign.is_arena:
            annotation_answer(annotation_id=task.pk, annotator=user, winner=found)
        else:
            annotation_answer(annotation_id=task.pk, annotator=user, values=found)
        done.append(task)
    raise AssertionError(f"still tasks after {limit} answers")


def in_turns(campaign: Campaign, users, answer, rounds: int) -> int:
    """Each user asks for a task and answers it, in turn, for `rounds` rounds; returns the answers."""
    count = 0
    for _ in range(rounds):
        for user in users:
            task = task_next(campaign=campaign, annotator=user)
            if task is None:
                continue
            found = answer(task, user)
            if campaign.is_arena:
                annotation_answer(annotation_id=task.pk, annotator=user, winner=found)
            else:
                annotation_answer(annotation_id=task.pk, annotator=user, values=found)
            count += 1
    return count


def noisy_rubric(campaign: Campaign, seed: int = 0):
    """An answer function: per caption a base quality (by its system), each annotator off by a little."""
    rng = random.Random(seed)

    def answer(task: Annotation, user) -> dict:
        base = 4 if task.caption.system.name == "Careful" else 2
        return {d["key"]: max(1, min(5, base + rng.choice((-1, 0, 0, 1)))) for d in campaign.rubric}

    return answer


def live_campaign(
    dataset, systems, quality: dict[int, int], *, slug="live", title="Live ratings", mode="rating", rounds=25
) -> Campaign:
    """A campaign on `systems` answered by three annotators through the real services: a rating
    is the system's `quality` give or take one (by image), an arena's winner the
    system of higher quality."""
    users = get_user_model().objects
    staff = users.filter(is_staff=True).first() or users.create_user("curator", is_staff=True)
    campaign = Campaign.objects.create(
        dataset=dataset,
        slug=slug,
        title=title,
        mode=mode,
        rubric=[d.as_json() for d in ACCR] if mode == Campaign.Mode.RATING else [],
        gold_rate=0,
        created_by=staff,
    )
    campaign.systems.set(systems)
    raters = [users.create_user(f"{slug}-rater-{n}") for n in range(3)]
    # Each system's ratings step around its quality in a fixed order (not by row ids, which differ
    # from run to run): its mean stays within a third of a point of it, and its ratings vary.
    steps = {system: itertools.cycle((0, 0, 1, -1)) for system in quality}
    for _ in range(rounds):
        for rater in raters:
            task = task_next(campaign=campaign, annotator=rater)
            if task is None:
                continue
            if campaign.is_arena:
                left, right = quality[task.caption.system_id], quality[task.other.system_id]
                winner = "left" if left > right else "right" if right > left else "tie"
                annotation_answer(annotation_id=task.pk, annotator=rater, winner=winner)
            else:
                system = task.caption.system_id
                value = max(1, min(5, quality[system] + next(steps[system])))
                annotation_answer(annotation_id=task.pk, annotator=rater, values={d.key: value for d in ACCR})
    return campaign
