"""Answering campaign tasks through the real services, as an annotator would."""

from __future__ import annotations

import random

from campaigns.models import Annotation, Campaign
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next

PASSWORD = "a long test password"  # every account the campaign tests make


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
