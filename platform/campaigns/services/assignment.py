"""What an annotator is shown next (docs/human-evaluation.md, "Assignment").

- Only captions everyone may see, of the campaign's systems, on the campaign's dataset (read through
  the visibility rule at every assignment: a submission made private or withdrawn leaves at once).
- Never a caption of an image without a picture to show (catalog.pictures: a stored file, else an
  image URL on an allowed host): a caption is judged against its picture, never alone.
- Never a caption of a system whose submission belongs to the annotator or to an account taken for
  the same person (identity.linked_accounts: the sock-puppet rule).
- Never the same caption twice to one annotator (rating), never the same pair twice (arena).
- Balance (rating): the system with the fewest answers first; within it a caption other people
  have started and that still lacks answers (captions are completed, so agreement between
  annotators can be measured from the first answers on), then the image with the fewest answers;
  ties broken at random. A caption that has its `ratings_wanted` answers is not shown again.
- Balance (arena): the image with the fewest comparisons, then the pair of systems with the fewest;
  an image that has its `ratings_wanted` comparisons is not shown again.
- Gold checks at the campaign's rate: a caption of another image (a decoy) shown with this image,
  drawn so that nothing public tells it from a real task: a submitted system's caption (blind while
  the campaign is open: catalog.visibility.caption_q) that no search of the item browser finds.
- One open task per annotator: asking again gives the same one until it is answered or skipped.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from campaigns.models import Annotation, Campaign
from campaigns.pictures import pictured_q
from campaigns.services.identity import linked_accounts
from campaigns.services.quality import flagged_annotators
from catalog.models import Caption, Item, System
from catalog.pictures import is_showable
from plumbing.errors import ApplicationError


class NotAllowed(ApplicationError, PermissionError):
    """403: the viewer may not annotate in this campaign (closed, invited-only, not signed in)."""

    status = 403


def may_annotate(campaign: Campaign, user) -> str | None:
    """Why `user` may not annotate in `campaign`, or None."""
    if user is None or not user.is_authenticated:
        return "sign in to annotate"
    if campaign.status != Campaign.Status.OPEN:
        return "this campaign is closed"
    if campaign.audience == Campaign.Audience.INVITED and not campaign.annotators.filter(pk=user.pk).exists():
        return "this campaign is for invited annotators only"
    return None


def excluded_systems(campaign: Campaign, user_id: int) -> set[int]:
    """The campaign's systems the annotator may not judge: their own submissions' and those of the
    accounts taken for the same person."""
    people = linked_accounts(user_id)
    return set(campaign.systems.filter(submission__owner_id__in=people).order_by().values_list("id", flat=True))


@dataclass(frozen=True)
class Candidate:
    caption: int
    item: int
    system: int


def eligible_captions(campaign: Campaign, user_id: int) -> list[Candidate]:
    """The campaign's captions the annotator may be shown (see the module's rules)."""
    rows = (
        Caption.objects.visible_to(None)
        .filter(pictured_q(to_item="item__"), item__dataset_id=campaign.dataset_id, system__in=campaign.systems.all())
        .exclude(system_id__in=excluded_systems(campaign, user_id))
        .order_by("id")
        .values_list("id", "item_id", "system_id")
    )
    return [Candidate(*row) for row in rows]


def task_next(*, campaign: Campaign, annotator) -> Annotation | None:
    """The annotator's open task, or a new one; None when there is nothing left for them."""
    reason = may_annotate(campaign, annotator)
    if reason:
        raise NotAllowed(reason)
    for _ in range(3):  # two requests of one annotator at once: the second reads the first's task
        open_task = _open_task(campaign, annotator.pk)
        if open_task is not None:
            return open_task
        try:
            with transaction.atomic():
                # One assignment per campaign at a time: the counts it balances on are then exact.
                Campaign.objects.select_for_update().filter(pk=campaign.pk).first()
                return _assign(campaign, annotator.pk)
        except IntegrityError:
            continue
    return _open_task(campaign, annotator.pk)


def _open_task(campaign: Campaign, user_id: int) -> Annotation | None:
    task = (
        Annotation.objects.filter(campaign=campaign, annotator_id=user_id, status=Annotation.Status.SHOWN)
        .select_related("caption", "other", "item__media")
        .first()
    )
    if task is None:
        return None
    # A task whose picture is gone since is not shown again (an answer already given with it stands).
    if not task_still_allowed(task, user_id) or not is_showable(task.item.media):
        task.status = Annotation.Status.SKIPPED
        task.save(update_fields=["status"])
        return None
    return task


def task_still_allowed(task: Annotation, user_id: int) -> bool:
    """Whether every caption the task shows (a gold check's decoy too) may still be shown to the
    annotator: its system may have left the campaign's reach since (withdrawn, private, or its owner
    linked to the annotator)."""
    campaign = task.campaign
    shown = {pk for pk in (task.caption_id, task.other_id) if pk is not None}
    allowed = (
        Caption.objects.visible_to(None)
        .filter(pk__in=shown, item__dataset_id=campaign.dataset_id, system__in=campaign.systems.all())
        .exclude(system_id__in=excluded_systems(campaign, user_id))
    )
    return allowed.count() == len(shown)


DECOYS_TRIED = 32  # captions drawn for a gold check, tried in turn until one is usable
SEARCHED = 80  # characters of a caption an annotator would search for (the item browser's box takes any)


def _findable(text: str, dataset_id: int) -> bool:
    """Whether a search of the dataset's item browser for the caption's words (its first SEARCHED
    characters) finds an image: a caption anyone may read, or a reference, that contains them. A
    decoy that a search finds would tell its own image, and so that it is a gold check."""
    probe = text.strip()[:SEARCHED]
    if not probe:
        return False
    captions = Caption.objects.listed_to(None).filter(item__dataset_id=dataset_id, text__icontains=probe)
    references = Item.objects.filter(dataset_id=dataset_id, references__icontains=probe)
    return captions.exists() or references.exists()


def _rng(campaign: Campaign, user_id: int, count: int) -> random.Random:
    return random.Random(f"{campaign.pk}:{user_id}:{count}")


def _assign(campaign: Campaign, user_id: int) -> Annotation | None:
    pool = eligible_captions(campaign, user_id)
    if not pool:
        return None
    mine = Annotation.objects.filter(campaign=campaign, annotator_id=user_id)
    rng = _rng(campaign, user_id, mine.count())
    gold = campaign.gold_rate > 0 and rng.random() < campaign.gold_rate
    if campaign.is_arena:
        task = _arena_task(campaign, user_id, pool, mine, rng)
    else:
        task = _rating_task(campaign, pool, mine, rng)
    if task is None:
        return None
    if gold:
        task = _gold_task(campaign, task, pool, mine, rng) or task
    task.campaign, task.annotator_id = campaign, user_id
    task.save()
    return task


OPEN_TASK_HOLDS = timedelta(minutes=30)  # how long an unanswered task keeps its caption's place


def _counted(campaign: Campaign):
    """The campaign's tasks that count towards balance: answered, or open for less than
    OPEN_TASK_HOLDS (a task left open longer gives its place back), not gold checks, and not by
    annotators flagged by their gold checks when the campaign leaves them out."""
    tasks = (
        Annotation.objects.filter(campaign=campaign, decoy__isnull=True)
        .exclude(status=Annotation.Status.SKIPPED)
        .exclude(status=Annotation.Status.SHOWN, shown_at__lt=timezone.now() - OPEN_TASK_HOLDS)
    )
    if campaign.exclude_flagged:
        tasks = tasks.exclude(annotator_id__in=flagged_annotators(campaign))
    return tasks


def _rating_task(campaign: Campaign, pool: list[Candidate], mine, rng: random.Random) -> Annotation | None:
    seen = set(mine.values_list("caption_id", flat=True))
    counted = list(_counted(campaign).values_list("caption_id", flat=True))
    per_caption = Counter(counted)
    system_of = {candidate.caption: candidate for candidate in pool}
    per_system = Counter(system_of[c].system for c in counted if c in system_of)
    per_item = Counter(system_of[c].item for c in counted if c in system_of)
    open_ = [c for c in pool if c.caption not in seen and per_caption[c.caption] < campaign.ratings_wanted]
    if not open_:
        return None
    rng.shuffle(open_)
    # The system with the fewest answers; within it a caption already started (so captions reach
    # their `ratings_wanted` and agreement can be measured early), then the image with the fewest.
    chosen = min(open_, key=lambda c: (per_system[c.system], -per_caption[c.caption], per_item[c.item]))
    return Annotation(item_id=chosen.item, caption_id=chosen.caption)


def _arena_task(campaign: Campaign, user_id: int, pool: list[Candidate], mine, rng: random.Random) -> Annotation | None:
    seen = {frozenset(pair) for pair in mine.filter(other__isnull=False).values_list("caption_id", "other_id")}
    by_item: dict[int, list[Candidate]] = {}
    for candidate in pool:
        by_item.setdefault(candidate.item, []).append(candidate)
    counted = list(
        _counted(campaign).filter(other__isnull=False).values_list("item_id", "caption__system_id", "other__system_id")
    )
    per_item = Counter(item for item, _, _ in counted)
    per_pair = Counter(frozenset((a, b)) for _, a, b in counted)
    options = []
    for item, captions in by_item.items():
        if per_item[item] >= campaign.ratings_wanted:
            continue
        options += [
            (left, right)
            for i, left in enumerate(captions)
            for right in captions[i + 1 :]
            if left.system != right.system and frozenset((left.caption, right.caption)) not in seen
        ]
    if not options:
        return None
    rng.shuffle(options)
    left, right = min(
        options, key=lambda pair: (per_item[pair[0].item], per_pair[frozenset((pair[0].system, pair[1].system))])
    )
    if rng.random() < 0.5:  # position randomised
        left, right = right, left
    return Annotation(item_id=left.item, caption_id=left.caption, other_id=right.caption)


def _gold_task(
    campaign: Campaign, task: Annotation, pool: list[Candidate], mine, rng: random.Random
) -> Annotation | None:
    """The chosen image with a decoy: a caption of another image the annotator has not been shown,
    one that nothing public tells from a real task (docs/human-evaluation.md, "Blind annotation"):
    a submitted system's where the campaign has one (an open campaign's captions are listed to no
    one, catalog.visibility.caption_q, but the dataset's own are published with it: its candidates
    download and its source; a task showing one is known real, a residual), and one whose
    words no caption anyone may read, nor any reference, contains (a search would find its image)."""
    seen = set(mine.values_list("caption_id", flat=True)) | set(
        mine.filter(other__isnull=False).values_list("other_id", flat=True)
    )
    decoys = [c for c in pool if c.item != task.item_id and c.caption not in seen]
    submitted = set(
        System.objects.filter(pk__in={c.system for c in decoys}, submission__isnull=False).values_list("pk", flat=True)
    )
    if submitted:
        decoys = [c for c in decoys if c.system in submitted]
    if not decoys:
        return None
    # A decoy that says what one of this image's own captions says would have no known answer.
    own = set(Caption.objects.filter(item_id=task.item_id).values_list("text", flat=True))
    drawn = [c.caption for c in rng.sample(decoys, min(DECOYS_TRIED, len(decoys)))]
    texts = dict(Caption.objects.filter(pk__in=drawn).values_list("pk", "text"))
    decoy = next(
        (pk for pk in drawn if pk in texts and texts[pk] not in own and not _findable(texts[pk], campaign.dataset_id)),
        None,
    )
    if decoy is None:
        return None
    if task.other_id is None:
        return Annotation(item_id=task.item_id, caption_id=decoy, decoy_id=decoy)
    if rng.random() < 0.5:
        return Annotation(item_id=task.item_id, caption_id=task.caption_id, other_id=decoy, decoy_id=decoy)
    return Annotation(item_id=task.item_id, caption_id=decoy, other_id=task.caption_id, decoy_id=decoy)
