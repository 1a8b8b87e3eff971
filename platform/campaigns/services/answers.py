"""Storing an annotator's answer: the task's answer, and for a rating campaign's real (not gold)
task one Judgment per rubric dimension under the annotator's pseudonym; then a refresh of the
campaign's results is scheduled (throttled: campaigns.services.refresh)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from campaigns.models import Annotation, Campaign
from campaigns.rubrics import dimension_of
from campaigns.services.assignment import may_annotate, task_still_allowed
from campaigns.services.identity import pseudonym
from campaigns.services.refresh import refresh_soon
from catalog.models import Judgment
from plumbing.errors import ApplicationError, Problem


class AnswerRefused(ApplicationError, ValueError):
    """An answer that cannot be stored; `problems` maps a field to what is wrong with it."""

    def __init__(self, problems: dict[str, str]):
        located = [Problem(problem, where=name) for name, problem in problems.items()]
        super().__init__("; ".join(map(str, located)), located=located)
        self.problems = problems


def _rating_values(campaign: Campaign, values: dict) -> dict[str, int]:
    problems: dict[str, str] = {}
    clean: dict[str, int] = {}
    for data in campaign.rubric:
        dimension = dimension_of(data)
        raw = values.get(dimension.key)
        if raw in (None, ""):
            problems[dimension.key] = f"rate {dimension.name} from {dimension.low} to {dimension.high}"
            continue
        try:
            number = int(str(raw).strip())
        except ValueError:
            problems[dimension.key] = f"{raw!r} is not a whole number from {dimension.low} to {dimension.high}"
            continue
        if not dimension.low <= number <= dimension.high:
            problems[dimension.key] = f"{number} is outside {dimension.low}-{dimension.high}"
            continue
        clean[dimension.key] = number
    unknown = sorted(set(values) - {data["key"] for data in campaign.rubric})
    if unknown:
        problems[unknown[0]] = f"not a dimension of this rubric ({', '.join(d['key'] for d in campaign.rubric)})"
    if problems:
        raise AnswerRefused(problems)
    return clean


def annotation_answer(
    *,
    annotation_id: int,
    annotator,
    values: dict | None = None,
    winner: str = "",
    skip: bool = False,
    campaign_id: int | None = None,
) -> Annotation:
    """Store the answer to one of the annotator's open tasks (or skip it). A task whose captions
    may no longer be shown to them (withdrawn, made private, or their owner since linked to the
    annotator) is skipped and the answer refused."""
    with transaction.atomic():
        task, refused = _answer(annotation_id, annotator, values or {}, winner, skip, campaign_id)
    if refused is not None:  # raised after the commit: the task stays skipped
        raise refused
    return task


def _answer(
    annotation_id: int, annotator, values: dict, winner: str, skip: bool, campaign_id: int | None
) -> tuple[Annotation, AnswerRefused | None]:
    tasks = Annotation.objects.select_for_update().select_related("campaign")
    if campaign_id is not None:  # the page of one campaign answers its own tasks only
        tasks = tasks.filter(campaign_id=campaign_id)
    task = tasks.filter(pk=annotation_id, annotator_id=annotator.pk).first()
    if task is None:
        raise AnswerRefused({"task": "no such task of yours"})
    if task.status != Annotation.Status.SHOWN:
        raise AnswerRefused({"task": f"this task was already {task.status}"})
    campaign = task.campaign
    reason = may_annotate(campaign, annotator)
    if reason:
        raise AnswerRefused({"campaign": reason})
    if skip:
        task.status = Annotation.Status.SKIPPED
        task.save(update_fields=["status"])
        return task, None
    if not task_still_allowed(task, annotator.pk):
        task.status = Annotation.Status.SKIPPED
        task.save(update_fields=["status"])
        return task, AnswerRefused(
            {
                "task": "you may not judge captions of your own submissions (or of an account linked to yours), "
                "nor of a submission withdrawn or made private since"
            }
        )
    if campaign.is_arena:
        if winner not in Annotation.Winner.values:
            raise AnswerRefused({"winner": "choose left, right or tie"})
        task.winner = winner
    else:
        answer = _rating_values(campaign, values or {})
        task.values = answer
    task.status, task.answered_at = Annotation.Status.ANSWERED, timezone.now()
    task.save(update_fields=["status", "answered_at", "values", "winner"])
    if not campaign.is_arena and not task.is_gold:
        name = pseudonym(campaign, annotator.pk)
        seconds = round(task.seconds or 0.0, 3)
        Judgment.collected.bulk_create(
            [
                Judgment(
                    caption_id=task.caption_id,
                    dimension=key,
                    annotator=name,
                    value=float(value),
                    source=campaign.source,
                    detail={"seconds": seconds},
                )
                for key, value in answer.items()
            ]
        )
    refresh_soon(campaign)
    return task, None
