"""What annotators are shown: rating tasks balanced over systems, captions completed to their
`ratings_wanted` before new ones are started and never beyond, never one caption twice to one
annotator, the same task again on a reload, nothing once all is answered; arena pairs of two
systems' captions of one image, sides drawn at random, never one pair twice to one annotator, at
most `ratings_wanted` comparisons per image. Answers are checked against the rubric."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from campaigns.models import Annotation, Campaign
from campaigns.services.answers import AnswerRefused, annotation_answer
from campaigns.services.assignment import NotAllowed, task_next
from campaigns.services.creation import campaign_status_set
from catalog.models import Caption, Judgment
from tests.platform.factories import submit

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_rating_tasks_are_balanced_completed_and_never_repeated(make_campaign, make_user, submitted):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0, rubric_name="thumb")
    people = [make_user(name) for name in ("ann", "ned", "eve")]
    system_of = dict(Caption.objects.filter(system__in=campaign.systems.all()).values_list("id", "system_id"))
    assert len(system_of) == 200
    per_caption: Counter = Counter()
    per_system: Counter = Counter(dict.fromkeys(set(system_of.values()), 0))
    raters: dict[int, set[int]] = defaultdict(set)  # caption -> who rated it
    seen: dict[int, list[int]] = defaultdict(list)  # annotator -> captions shown
    finished: set[int] = set()
    steps = 0
    while len(finished) < len(people):
        for user in people:
            if user.pk in finished:
                continue
            task = task_next(campaign=campaign, annotator=user)
            if task is None:
                finished.add(user.pk)
                continue
            if steps < 10:
                assert task_next(campaign=campaign, annotator=user).pk == task.pk  # a reload shows the same task
            assert not task.is_gold and task.other_id is None and task.item_id == task.caption.item_id
            caption, system = task.caption_id, system_of[task.caption_id]
            assert caption not in seen[user.pk], "the same caption twice to one annotator"
            if per_caption[caption] == 0:
                # a new caption is started only when this system has no started one this annotator could complete
                started = [c for c, n in per_caption.items() if 0 < n < 2 and system_of[c] == system]
                assert all(user.pk in raters[c] for c in started), (steps, started)
            annotation_answer(annotation_id=task.pk, annotator=user, values={"precision": 3, "recall": 4})
            steps += 1
            seen[user.pk].append(caption)
            raters[caption].add(user.pk)
            per_caption[caption] += 1
            per_system[system] += 1
            assert per_caption[caption] <= campaign.ratings_wanted
            assert max(per_system.values()) - min(per_system.values()) <= 1, (steps, per_system)
    # everything has its answers: every caption exactly twice, by two different people
    assert steps == 400
    assert set(per_caption.values()) == {2}
    assert len(per_caption) == 200
    assert all(len(who) == 2 for who in raters.values())
    assert all(len(shown) == len(set(shown)) for shown in seen.values())
    assert Judgment.collected.filter(source=campaign.source).count() == 400 * 2
    assert not Annotation.objects.filter(campaign=campaign).exclude(status=Annotation.Status.ANSWERED).exists()
    for user in people:
        assert task_next(campaign=campaign, annotator=user) is None


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_arena_pairs_two_systems_with_random_sides_never_twice(demo_dataset, make_campaign, make_user, submitted):
    third = submit(make_user("cyd"), demo_dataset, "Third")
    systems = [s.system for s in submitted] + [third.system]
    campaign = make_campaign("arena", mode=Campaign.Mode.ARENA, systems=systems, ratings_wanted=2, gold_rate=0)
    assert campaign.rubric == []
    people = [make_user(name) for name in ("ann", "ned", "eve")]
    finished: set[int] = set()
    pairs_of: dict[int, set[frozenset]] = defaultdict(set)
    left_of: Counter = Counter()  # (left system, right system)
    per_item: Counter = Counter()
    while len(finished) < len(people):
        for user in people:
            if user.pk in finished:
                continue
            task = task_next(campaign=campaign, annotator=user)
            if task is None:
                finished.add(user.pk)
                continue
            if sum(per_item.values()) < 10:
                assert task_next(campaign=campaign, annotator=user).pk == task.pk
            left, right = task.caption, task.other
            assert not task.is_gold and right is not None
            assert left.item_id == right.item_id == task.item_id
            assert left.system_id != right.system_id
            assert {left.system_id, right.system_id} <= {s.pk for s in systems}
            pair = frozenset((left.pk, right.pk))
            assert pair not in pairs_of[user.pk], "the same pair twice to one annotator"
            pairs_of[user.pk].add(pair)
            left_of[(left.system_id, right.system_id)] += 1
            per_item[task.item_id] += 1
            assert per_item[task.item_id] <= campaign.ratings_wanted
            annotation_answer(annotation_id=task.pk, annotator=user, winner="left")
    assert sum(per_item.values()) == 200
    assert set(per_item.values()) == {2}  # each image its 2 comparisons
    # positions are drawn at random: each system of each pair shows on both sides
    for a in systems:
        for b in systems:
            if a != b:
                assert left_of[(a.pk, b.pk)] > 10, (a.name, b.name, left_of)
    # every pair of systems compared, none starved (the pair with the fewest comparisons goes first)
    per_pair = Counter(frozenset(key) for key in left_of.elements())
    assert len(per_pair) == 3
    assert min(per_pair.values()) >= 50
    assert not Judgment.collected.filter(source=campaign.source).exists()  # arena answers are no ratings


def test_answers_are_checked_and_nothing_stored_when_refused(make_campaign, make_user):
    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    ann, ned = make_user("ann"), make_user("ned")
    task = task_next(campaign=campaign, annotator=ann)
    good = {"accuracy": 5, "completeness": 4, "conciseness": 3, "relevance": 2}
    for values, field in (
        ({**good, "accuracy": 6}, "accuracy"),
        ({key: value for key, value in good.items() if key != "relevance"}, "relevance"),
        ({**good, "completeness": "x"}, "completeness"),
        ({**good, "fluency": 3}, "fluency"),
    ):
        with pytest.raises(AnswerRefused) as caught:
            annotation_answer(annotation_id=task.pk, annotator=ann, values=values)
        assert set(caught.value.problems) == {field}
    with pytest.raises(AnswerRefused, match="no such task of yours"):
        annotation_answer(annotation_id=task.pk, annotator=ned, values=good)
    assert not Judgment.collected.filter(source=campaign.source).exists()
    annotation_answer(annotation_id=task.pk, annotator=ann, values=good)
    stored = Judgment.collected.filter(source=campaign.source)
    assert {(j.dimension, j.value, j.caption_id) for j in stored} == {
        (key, float(value), task.caption_id) for key, value in good.items()
    }
    assert not Judgment.objects.filter(source=campaign.source).exists()  # not among the imported judgments
    with pytest.raises(AnswerRefused, match="already answered"):
        annotation_answer(annotation_id=task.pk, annotator=ann, values=good)
    # a skip stores nothing and the next task is another caption
    second = task_next(campaign=campaign, annotator=ann)
    annotation_answer(annotation_id=second.pk, annotator=ann, skip=True)
    third = task_next(campaign=campaign, annotator=ann)
    assert third.caption_id not in {task.caption_id, second.caption_id}
    assert stored.count() == 4
    # a closed campaign takes no answer (its tasks still shown are dropped) and gives no task
    campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)
    with pytest.raises(AnswerRefused, match="no such task"):
        annotation_answer(annotation_id=third.pk, annotator=ann, values=good)
    with pytest.raises(NotAllowed):
        task_next(campaign=campaign, annotator=ned)


def test_an_invited_campaign_gives_tasks_to_its_annotators_only(make_campaign, make_user):
    ann, ned = make_user("ann"), make_user("ned")
    campaign = make_campaign(audience=Campaign.Audience.INVITED, annotators=[ann], gold_rate=0)
    assert task_next(campaign=campaign, annotator=ann) is not None
    with pytest.raises(NotAllowed, match="invited"):
        task_next(campaign=campaign, annotator=ned)


def test_a_submission_made_private_leaves_at_once(make_campaign, make_user, submitted):
    from catalog.uploads.services import upload_visibility_set
    from submissions.services import SUBMISSIONS

    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    ann = make_user("ann")
    task = task_next(campaign=campaign, annotator=ann)
    hidden = next(s for s in submitted if s.system_id == task.caption.system_id)
    upload_visibility_set(upload=hidden, is_public=False, kind=SUBMISSIONS)
    again = task_next(campaign=campaign, annotator=ann)
    assert again.pk != task.pk
    assert again.caption.system_id != hidden.system_id
    assert Annotation.objects.get(pk=task.pk).status == Annotation.Status.SKIPPED


def test_an_answer_to_a_caption_made_private_since_it_was_shown_is_refused(make_campaign, make_user, submitted):
    from catalog.uploads.services import upload_visibility_set
    from submissions.services import SUBMISSIONS

    campaign = make_campaign(ratings_wanted=2, gold_rate=0)
    ann = make_user("ann")
    task = task_next(campaign=campaign, annotator=ann)
    hidden = next(s for s in submitted if s.system_id == task.caption.system_id)
    upload_visibility_set(upload=hidden, is_public=False, kind=SUBMISSIONS)
    values = {d["key"]: 3 for d in campaign.rubric}
    with pytest.raises(AnswerRefused, match="made private since"):
        annotation_answer(annotation_id=task.pk, annotator=ann, values=values)
    assert Annotation.objects.get(pk=task.pk).status == Annotation.Status.SKIPPED  # kept, not rolled back
    assert not Judgment.collected.filter(source=campaign.source).exists()


def _answered_by(campaign, user) -> set[int]:
    """Everything the annotator is given until nothing is left, answered: the captions."""
    given = set()
    while (task := task_next(campaign=campaign, annotator=user)) is not None:
        given.add(task.caption_id)
        annotation_answer(annotation_id=task.pk, annotator=user, values={d["key"]: 3 for d in campaign.rubric})
    return given


@pytest.mark.slow  # over 5 s of CPU (issue 40)
def test_an_open_task_holds_its_caption_for_half_an_hour_then_gives_it_back(make_campaign, make_user, submitted):
    from datetime import timedelta

    from django.utils import timezone

    one = [submitted[0].system]  # 100 captions each
    fresh = make_campaign("fresh", systems=one, ratings_wanted=1, gold_rate=0)
    stale = make_campaign("stale", systems=one, ratings_wanted=1, gold_rate=0)
    held = {
        campaign.slug: task_next(campaign=campaign, annotator=make_user(f"away-{campaign.slug}"))
        for campaign in (fresh, stale)
    }
    Annotation.objects.filter(pk=held["stale"].pk).update(shown_at=timezone.now() - timedelta(minutes=31))
    assert held["fresh"].caption_id not in _answered_by(fresh, make_user("ned"))
    assert held["stale"].caption_id in _answered_by(stale, make_user("pip"))


@pytest.mark.slow
def test_a_flagged_annotators_answers_leave_their_captions_to_others(make_campaign, make_user):
    campaign = make_campaign(ratings_wanted=1, gold_rate=0, gold_minimum=1)
    spammer = make_user("spammer")
    rated = _answered_by(campaign, spammer)
    assert task_next(campaign=campaign, annotator=make_user("ann")) is None  # every caption has its answer
    # The spammer fails a gold check (a decoy rated 5 on accuracy) and is flagged.
    Campaign.objects.filter(pk=campaign.pk).update(gold_rate=1.0)
    campaign.refresh_from_db()
    Annotation.objects.create(
        campaign=campaign,
        annotator=spammer,
        item_id=Caption.objects.get(pk=min(rated)).item_id,
        caption_id=max(rated),
        decoy_id=max(rated),
        status=Annotation.Status.ANSWERED,
        values={d["key"]: 5 for d in campaign.rubric},
    )
    assert task_next(campaign=campaign, annotator=make_user("ned")) is not None  # their captions are open again
