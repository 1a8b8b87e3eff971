"""Creating a campaign: staff only; only systems everyone may see (a private or withdrawn
submission's is refused under "systems"); an arena needs two systems; an invited-only campaign needs
annotators; a custom rubric's mistakes name their line. Nothing is stored when refused."""

from __future__ import annotations

import pytest

from campaigns.models import Annotation, Campaign
from campaigns.rubrics import RubricError, rubric_dimensions
from campaigns.services.answers import annotation_answer
from campaigns.services.assignment import task_next
from campaigns.services.creation import CampaignRefused, CampaignSpec, campaign_create, campaign_status_set
from catalog.uploads.services import upload_withdraw
from submissions.services import SUBMISSIONS
from tests.platform.factories import submit

pytestmark = pytest.mark.django_db


def refused(make_campaign, **spec) -> dict[str, str]:
    with pytest.raises(CampaignRefused) as caught:
        make_campaign(**spec)
    assert not Campaign.objects.exists()
    return caught.value.problems


def test_only_staff_create_campaigns(demo_dataset, submitted, owners):
    spec = CampaignSpec(slug="mine", title="Mine", dataset=demo_dataset, systems=[s.system for s in submitted])
    with pytest.raises(PermissionError):
        campaign_create(spec=spec, created_by=owners[0])
    assert not Campaign.objects.exists()


def test_a_campaign_of_public_systems_is_made_with_its_rubric_frozen(make_campaign, submitted):
    campaign = make_campaign("accr", ratings_wanted=2, gold_rate=0)
    assert set(campaign.systems.all()) == {s.system for s in submitted}
    assert [d["key"] for d in campaign.rubric] == ["accuracy", "completeness", "conciseness", "relevance"]
    assert campaign.rubric[0]["low"] == 1
    assert campaign.rubric[0]["high"] == 5
    assert campaign.protocol_key == f"campaign-{campaign.pk}/live@1"
    assert campaign.source == f"campaign:{campaign.pk}"
    with pytest.raises(CampaignRefused) as caught:
        make_campaign("accr")
    assert set(caught.value.problems) == {"slug"}
    assert Campaign.objects.count() == 1


def test_a_private_submissions_system_is_refused_under_systems(demo_dataset, make_campaign, make_user, submitted):
    hidden = submit(make_user("cyd"), demo_dataset, "Secret", public=False)
    problems = refused(make_campaign, systems=[submitted[0].system, hidden.system])
    assert set(problems) == {"systems"}
    assert hidden.system.name in problems["systems"]
    assert submitted[0].system.name not in problems["systems"]


def test_a_withdrawn_submissions_system_is_refused_under_systems(make_campaign, submitted):
    upload_withdraw(upload=submitted[1], kind=SUBMISSIONS)
    problems = refused(make_campaign, systems=[s.system for s in submitted])
    assert set(problems) == {"systems"}
    assert submitted[1].system.name in problems["systems"]


def test_an_arena_needs_two_systems_a_rating_campaign_one(make_campaign, submitted):
    problems = refused(make_campaign, mode=Campaign.Mode.ARENA, systems=[submitted[0].system])
    assert problems == {"systems": "choose at least 2 systems"}
    # the same system twice is still one system
    problems = refused(make_campaign, mode=Campaign.Mode.ARENA, systems=[submitted[0].system] * 2)
    assert problems == {"systems": "choose at least 2 systems"}
    assert refused(make_campaign, systems=[]) == {"systems": "choose at least 1 system"}
    assert make_campaign("one", systems=[submitted[0].system]).systems.count() == 1


def test_an_invited_campaign_needs_annotators(make_campaign, make_user):
    problems = refused(make_campaign, audience=Campaign.Audience.INVITED)
    assert set(problems) == {"annotators"}
    ann = make_user("ann")
    campaign = make_campaign(audience=Campaign.Audience.INVITED, annotators=[ann])
    assert list(campaign.annotators.all()) == [ann]


def test_out_of_range_settings_are_each_named(make_campaign):
    problems = refused(make_campaign, ratings_wanted=0, gold_rate=0.9, gold_pass=1.5)
    assert set(problems) == {"ratings_wanted", "gold_rate", "gold_pass"}


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("fluency: Is it grammatical?\nnonsense without a colon", 2, "write `name: definition`"),
        ("fluency: Is it grammatical?\n\nfluency: again", 3, "'fluency' twice"),
        ("fluency: ok\nbad-key!: what", 2, "is not a short name"),
        ("fluency:", 1, "write `name: definition`"),
    ],
)
def test_custom_rubric_errors_name_the_line(make_campaign, text, line, words):
    problems = refused(make_campaign, rubric_name="custom", custom_rubric=text)
    assert set(problems) == {"rubric"}
    assert problems["rubric"].startswith(f"custom rubric line {line}:")
    assert words in problems["rubric"]


def test_a_custom_rubric_is_parsed_and_stored(make_campaign):
    campaign = make_campaign(rubric_name="custom", custom_rubric="Fluency: Is it grammatical?\n\nSpecificity: Details?")
    assert [(d["key"], d["definition"]) for d in campaign.rubric] == [
        ("fluency", "Is it grammatical?"),
        ("specificity", "Details?"),
    ]
    with pytest.raises(RubricError, match="at least one dimension"):
        rubric_dimensions("custom", "\n  \n")
    with pytest.raises(RubricError, match="at most 8"):
        rubric_dimensions("custom", "\n".join(f"d{i}: definition {i}" for i in range(9)))


def test_the_results_own_names_and_the_form_s_address_are_refused(make_campaign):
    problems = refused(make_campaign, rubric_name="custom", custom_rubric="accuracy: True?\nmean: An average")
    assert problems["rubric"].startswith("custom rubric line 2:")
    assert "results use" in problems["rubric"]
    assert "page of its own" in refused(make_campaign, slug="new")["slug"]


def test_the_admin_changes_campaigns_but_never_creates_one(make_campaign, client, staff):
    campaign = make_campaign()
    staff.is_superuser = True
    staff.save()
    client.force_login(staff)
    assert client.get("/admin/campaigns/campaign/add/").status_code == 403
    page = client.get(f"/admin/campaigns/campaign/{campaign.pk}/change/")
    assert page.status_code == 200
    assert 'name="systems"' not in page.content.decode()


def test_closing_drops_the_tasks_still_shown_so_none_survives_a_reopening(make_campaign, make_user):
    """A closed campaign's captions are listed again; a task left shown across a close and a reopening
    could be looked up before it is answered, so closing drops it (answers stay)."""
    campaign = make_campaign("accr", ratings_wanted=3, gold_rate=0)
    answering, waiting = make_user("ann"), make_user("bea")
    answered = task_next(campaign=campaign, annotator=answering)
    annotation_answer(annotation_id=answered.pk, annotator=answering, values={d["key"]: 4 for d in campaign.rubric})
    shown = task_next(campaign=campaign, annotator=waiting)
    assert shown is not None
    campaign_status_set(campaign=campaign, status=Campaign.Status.CLOSED)
    assert not Annotation.objects.filter(pk=shown.pk).exists()
    assert Annotation.objects.get(pk=answered.pk).status == Annotation.Status.ANSWERED
    campaign_status_set(campaign=campaign, status=Campaign.Status.OPEN)
    again = task_next(campaign=campaign, annotator=waiting)
    assert again is not None
    assert again.pk != shown.pk
