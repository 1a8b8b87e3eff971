"""Gold checks: a decoy (a caption of another image of the campaign) whose answer is known. An
annotator who rates decoys above the bottom quarter, or picks the decoy in the arena, fails them and
is flagged once they have `gold_minimum` gold answers; flagged annotators' ratings are left out of
the results and the export when the campaign says so, and counted when it does not."""

from __future__ import annotations

import json

import pytest

from campaigns.models import Annotation, Campaign
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next
from campaigns.services.exports import campaign_export_lines
from campaigns.services.identity import pseudonym
from campaigns.services.results import annotator_quality, campaign_refresh
from catalog.models import Judgment
from catalog.uploads.services import upload_visibility_set
from submissions.services import SUBMISSIONS
from tests.platform.campaigns.helpers import in_turns, noisy_rubric

pytestmark = pytest.mark.django_db


def all_gold(campaign: Campaign) -> Campaign:
    """Every task a gold check (more than creation allows, which is the point of a test)."""
    Campaign.objects.filter(pk=campaign.pk).update(gold_rate=1.0)
    campaign.refresh_from_db()
    return campaign


def gold_tasks(campaign, user, accuracy: int, count: int) -> list[Annotation]:
    tasks = []
    for _ in range(count):
        task = task_next(campaign=campaign, annotator=user)
        values = {d["key"]: 5 for d in campaign.rubric} | {"accuracy": accuracy}
        tasks.append(annotation_answer(annotation_id=task.pk, annotator=user, values=values))
    return tasks


def exported_annotators(campaign) -> set[str]:
    lines = [json.loads(line) for line in campaign_export_lines(campaign)]
    return {line["annotator"] for line in lines if line["type"] == "judgment"}


def test_rating_gold_flags_who_rates_decoys_high_and_results_leave_them_out(make_campaign, make_user, submitted):
    campaign = all_gold(make_campaign(ratings_wanted=3, gold_minimum=3, gold_pass=0.7))
    systems = {s.system_id for s in submitted}
    bad, ann, eve, ned = (make_user(name) for name in ("bad", "ann", "eve", "ned"))
    tasks = (
        gold_tasks(campaign, bad, 5, 3)
        + gold_tasks(campaign, ann, 1, 3)
        + gold_tasks(campaign, eve, 2, 3)  # 2 of 1-5 is still the bottom quarter
        + gold_tasks(campaign, ned, 5, 2)  # fails both, but below the minimum
    )
    for task in tasks:
        assert task.is_gold and task.caption_id == task.decoy_id and task.other_id is None
        assert task.decoy.item_id != task.item_id
        assert task.decoy.system_id in systems
    assert not Judgment.collected.filter(source=campaign.source).exists()  # gold answers are no ratings
    quality = annotator_quality(campaign)
    assert (quality[bad.pk]["gold"], quality[bad.pk]["gold_passed"], quality[bad.pk]["flagged"]) == (3, 0, True)
    assert (quality[ann.pk]["gold_passed"], quality[ann.pk]["flagged"]) == (3, False)
    assert (quality[eve.pk]["gold_passed"], quality[eve.pk]["flagged"]) == (3, False)
    assert (quality[ned.pk]["gold"], quality[ned.pk]["gold_passed"], quality[ned.pk]["flagged"]) == (2, 0, False)

    # Real tasks now: Bad's ratings are left out of agreement, the people column and the export.
    Campaign.objects.filter(pk=campaign.pk).update(gold_rate=0)
    campaign.refresh_from_db()
    in_turns(campaign, [bad, ann, eve], noisy_rubric(campaign), rounds=12)
    judgments = Judgment.collected.filter(source=campaign.source)
    names = {user: pseudonym(campaign, user.pk) for user in (bad, ann, eve)}
    assert set(judgments.values_list("annotator", flat=True)) == set(names.values())
    kept = judgments.exclude(annotator=names[bad])

    payload = campaign_refresh(campaign_id=campaign.pk).payload
    assert payload["flagged"] == 1
    assert payload["gold_answers"] == 11
    assert payload["annotators"][names[bad]]["flagged"] and payload["annotators"][names[bad]]["excluded"]
    assert not payload["annotators"][names[ann]]["excluded"]
    assert payload["agreement"]["accuracy"]["ratings"] == kept.filter(dimension="accuracy").count() == 24
    assert sum(cell["n"] for cell in payload["people"].values()) == 24
    assert exported_annotators(campaign) == {names[ann], names[eve]}

    Campaign.objects.filter(pk=campaign.pk).update(exclude_flagged=False)
    campaign.refresh_from_db()
    payload = campaign_refresh(campaign_id=campaign.pk).payload
    assert payload["annotators"][names[bad]]["flagged"] and not payload["annotators"][names[bad]]["excluded"]
    assert payload["agreement"]["accuracy"]["ratings"] == judgments.filter(dimension="accuracy").count() == 36
    assert sum(cell["n"] for cell in payload["people"].values()) == 36
    assert exported_annotators(campaign) == set(names.values())


def test_arena_gold_fails_who_picks_the_decoy(make_campaign, make_user):
    campaign = all_gold(make_campaign(mode=Campaign.Mode.ARENA, gold_minimum=3))
    fox, ann, ned = make_user("fox"), make_user("ann"), make_user("ned")
    sides = set()
    for user, choose in (
        (fox, lambda task: "left" if task.decoy_id == task.caption_id else "right"),  # the decoy
        (ann, lambda task: "right" if task.decoy_id == task.caption_id else "left"),  # the image's own caption
        (ned, lambda task: "tie"),
    ):
        for _ in range(4):
            task = task_next(campaign=campaign, annotator=user)
            assert task.is_gold and task.decoy_id in (task.caption_id, task.other_id)
            own = task.other if task.decoy_id == task.caption_id else task.caption
            assert own.item_id == task.item_id
            assert task.decoy.item_id != task.item_id
            sides.add("left" if task.decoy_id == task.caption_id else "right")
            annotation_answer(annotation_id=task.pk, annotator=user, winner=choose(task))
    quality = annotator_quality(campaign)
    assert (quality[fox.pk]["gold"], quality[fox.pk]["gold_passed"], quality[fox.pk]["flagged"]) == (4, 0, True)
    assert (quality[ann.pk]["gold_passed"], quality[ann.pk]["flagged"]) == (4, False)
    assert (quality[ned.pk]["gold_passed"], quality[ned.pk]["flagged"]) == (0, True)  # a tie is no pass
    payload = campaign_refresh(campaign_id=campaign.pk).payload
    assert payload["people"] == {}
    assert payload["gold_answers"] == 12  # gold counts towards no system


def test_an_open_gold_task_whose_decoy_was_made_private_is_dropped(make_campaign, make_user, submitted):
    campaign = all_gold(make_campaign(ratings_wanted=2))
    ann = make_user("ann")
    task = task_next(campaign=campaign, annotator=ann)
    assert task.is_gold
    hidden = next(s for s in submitted if s.system_id == task.decoy.system_id)
    upload_visibility_set(upload=hidden, is_public=False, kind=SUBMISSIONS)
    again = task_next(campaign=campaign, annotator=ann)
    assert again.pk != task.pk, "the private decoy is shown again"
    assert again.caption.system_id != hidden.system_id
    assert again.decoy.system_id != hidden.system_id


def test_a_skipped_gold_check_counts_as_failed(make_campaign, make_user):
    campaign = all_gold(make_campaign(ratings_wanted=2, gold_minimum=3))
    skipper = make_user("skipper")
    for _ in range(3):
        task = task_next(campaign=campaign, annotator=skipper)
        assert task.is_gold
        annotation_answer(annotation_id=task.pk, annotator=skipper, skip=True)
    quality = annotator_quality(campaign)[skipper.pk]
    assert (quality["gold"], quality["gold_passed"], quality["skips"], quality["flagged"]) == (3, 0, 3, True)


def test_a_decoy_never_says_what_a_caption_of_the_shown_image_says(make_campaign, make_user, submitted):
    from catalog.models import Caption

    campaign = all_gold(make_campaign(ratings_wanted=2))
    user = make_user("ann")
    first = task_next(campaign=campaign, annotator=user)
    assert first.is_gold and first.decoy.item_id != first.item_id  # gold checks happen
    annotation_answer(annotation_id=first.pk, annotator=user, skip=True)
    # Now every caption says the same: no decoy has a known answer, so no task is a gold check.
    Caption.objects.filter(system__in=[s.system for s in submitted]).update(text="A dog runs on the grass.")
    for _ in range(10):
        task = task_next(campaign=campaign, annotator=user)
        assert not task.is_gold
        annotation_answer(annotation_id=task.pk, annotator=user, skip=True)
