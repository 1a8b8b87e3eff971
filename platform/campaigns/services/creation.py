"""Creating a campaign (staff only), closing it, and choosing it for its dataset's board."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from campaigns.events import results_changed
from campaigns.models import Annotation, Campaign
from campaigns.pictures import dataset_pictures
from campaigns.rubrics import RubricError, rubric_dimensions
from catalog.models import Dataset, System
from plumbing.errors import ApplicationError, Problem

RESERVED_SLUGS = frozenset({"new"})  # /campaigns/new/ is the form


class CampaignRefused(ApplicationError, ValueError):
    """A campaign that cannot be made as asked; `problems` maps a field to what is wrong with it."""

    def __init__(self, problems: dict[str, str]):
        located = [Problem(problem, where=name) for name, problem in problems.items()]
        super().__init__("; ".join(map(str, located)), located=located)
        self.problems = problems


@dataclass
class CampaignSpec:
    slug: str
    title: str
    dataset: Dataset
    systems: list[System]
    mode: str = Campaign.Mode.RATING
    rubric_name: str = "accr"
    custom_rubric: str = ""
    description: str = ""
    ratings_wanted: int = 3
    audience: str = Campaign.Audience.SIGNED_IN
    annotators: list = field(default_factory=list)
    gold_rate: float = 0.1
    gold_pass: float = 0.7
    gold_minimum: int = 3
    exclude_flagged: bool = True


def campaign_systems_allowed(dataset: Dataset) -> list[System]:
    """The systems a campaign on `dataset` may include: those everyone may see (a submission's only
    while public and not withdrawn), because every annotator is shown their captions."""
    return list(System.objects.visible_to(None).filter(dataset=dataset).ranked().order_by("name"))


@transaction.atomic
def campaign_create(*, spec: CampaignSpec, created_by) -> Campaign:
    if not getattr(created_by, "is_staff", False):
        raise PermissionError("only staff create campaigns")
    try:
        dimensions = rubric_dimensions(spec.rubric_name, spec.custom_rubric)
        problems: dict[str, str] = {}
    except RubricError as error:
        dimensions, problems = [], {"rubric": str(error)}
    chosen = list({system.pk: system for system in spec.systems}.values())
    problems.update(_system_problems(spec, chosen))
    problems.update(_setting_problems(spec))
    problems.update(_picture_problems(spec.dataset))
    if problems:
        raise CampaignRefused(problems)
    try:
        with transaction.atomic():
            campaign = _campaign_insert(spec, dimensions, created_by)
    except IntegrityError:  # the same slug created meanwhile
        raise CampaignRefused({"slug": f"a campaign named {spec.slug!r} exists"}) from None
    campaign.systems.set(chosen)
    if spec.audience == Campaign.Audience.INVITED:
        campaign.annotators.set(spec.annotators)
    return campaign


def _system_problems(spec: CampaignSpec, chosen: list[System]) -> dict[str, str]:
    allowed = {system.pk for system in campaign_systems_allowed(spec.dataset)}
    hidden = [system.name for system in chosen if system.pk not in allowed]
    if hidden:
        return {
            "systems": f"not shown to everyone, so not to annotators either: {', '.join(sorted(hidden))} "
            "(a submission must be public and not withdrawn)"
        }
    minimum = 2 if spec.mode == Campaign.Mode.ARENA else 1
    if len(chosen) < minimum:
        return {"systems": f"choose at least {minimum} system{'s' if minimum > 1 else ''}"}
    return {}


def _picture_problems(dataset: Dataset) -> dict[str, str]:
    """A campaign none of whose items has a picture would show annotators nothing (assignment never
    gives a caption without its picture): it is not opened."""
    pictures = dataset_pictures(dataset)
    if pictures.items and not pictures.none_shown:
        return {}
    return {
        "dataset": f"none of the {pictures.items:,} items of {dataset.title} has a picture (no stored file, "
        "and no image URL the site may show), and annotators are never shown a caption without its picture: "
        "attach its media first (manage.py datasets media attach SLUG FOLDER)"
    }


def _setting_problems(spec: CampaignSpec) -> dict[str, str]:
    problems = {}
    if spec.slug in RESERVED_SLUGS:
        problems["slug"] = f"{spec.slug!r} is a page of its own (/campaigns/{spec.slug}/): choose another"
    elif Campaign.objects.filter(slug=spec.slug).exists():
        problems["slug"] = f"a campaign named {spec.slug!r} exists"
    if not 1 <= spec.ratings_wanted <= 20:
        problems["ratings_wanted"] = "between 1 and 20"
    if not 0 <= spec.gold_rate <= 0.5:
        problems["gold_rate"] = "between 0 and 0.5"
    if not 0 <= spec.gold_pass <= 1:
        problems["gold_pass"] = "between 0 and 1"
    if spec.audience == Campaign.Audience.INVITED and not spec.annotators:
        problems["annotators"] = "an invited-only campaign needs at least one annotator"
    return problems


def _campaign_insert(spec: CampaignSpec, dimensions: list, created_by) -> Campaign:
    return Campaign.objects.create(
        dataset=spec.dataset,
        slug=spec.slug,
        title=spec.title,
        description=spec.description,
        mode=spec.mode,
        rubric_name=spec.rubric_name if spec.mode == Campaign.Mode.RATING else "",
        rubric=[dimension.as_json() for dimension in dimensions] if spec.mode == Campaign.Mode.RATING else [],
        ratings_wanted=spec.ratings_wanted,
        audience=spec.audience,
        gold_rate=spec.gold_rate,
        gold_pass=spec.gold_pass,
        gold_minimum=spec.gold_minimum,
        exclude_flagged=spec.exclude_flagged,
        created_by=created_by,
    )


def campaign_status_set(*, campaign: Campaign, status: str) -> Campaign:
    """Close the campaign, or open it again: refused (CampaignRefused) while none of its dataset's
    items has a picture to show. Closing drops the tasks still shown and unanswered: once closed its
    captions are listed with their images and systems again, so a task kept open across a reopening
    could be looked up before it is answered (blind annotation, docs/human-evaluation.md)."""
    if status == Campaign.Status.OPEN:
        problems = _picture_problems(campaign.dataset)
        if problems:
            raise CampaignRefused(problems)
    with transaction.atomic():
        campaign.status = status
        campaign.save(update_fields=["status"])
        if status == Campaign.Status.CLOSED:
            Annotation.objects.filter(campaign=campaign, status=Annotation.Status.SHOWN).delete()
    return campaign


def campaign_board_set(*, campaign: Campaign, on_board: bool) -> Campaign:
    """Choose the campaign as its dataset's captioner board's people column, or stop (staff). One
    campaign per dataset: choosing one unchooses the other. The board shows it once it is eligible
    (campaigns.selectors.people_eligibility), the dataset's imported judgments until then; it is
    rebuilt after the commit either way."""
    with transaction.atomic():
        Dataset.objects.select_for_update().filter(pk=campaign.dataset_id).first()  # one choice at a time
        if on_board:
            Campaign.objects.filter(dataset_id=campaign.dataset_id, on_board=True).exclude(pk=campaign.pk).update(
                on_board=False
            )
        campaign.on_board = on_board
        campaign.save(update_fields=["on_board"])
        dataset_id = campaign.dataset_id
        transaction.on_commit(lambda: results_changed.send(Campaign, dataset_id=dataset_id, campaign_id=campaign.pk))
    return campaign
