"""Creating a campaign (staff only) and closing it."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from campaigns.models import Campaign
from campaigns.rubrics import RubricError, rubric_dimensions
from catalog.models import Dataset, System

RESERVED_SLUGS = frozenset({"new"})  # /campaigns/new/ is the form


class CampaignRefused(ValueError):
    """A campaign that cannot be made as asked; `problems` maps a field to what is wrong with it."""

    def __init__(self, problems: dict[str, str]):
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in problems.items()))
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
    problems: dict[str, str] = {}
    try:
        dimensions = rubric_dimensions(spec.rubric_name, spec.custom_rubric)
    except RubricError as error:
        problems["rubric"] = str(error)
        dimensions = []
    allowed = {system.pk for system in campaign_systems_allowed(spec.dataset)}
    chosen = list({system.pk: system for system in spec.systems}.values())
    hidden = [system.name for system in chosen if system.pk not in allowed]
    if hidden:
        problems["systems"] = (
            f"not shown to everyone, so not to annotators either: {', '.join(sorted(hidden))} "
            "(a submission must be public and not withdrawn)"
        )
    minimum = 2 if spec.mode == Campaign.Mode.ARENA else 1
    if len(chosen) < minimum:
        problems.setdefault("systems", f"choose at least {minimum} system{'s' if minimum > 1 else ''}")
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
    campaign.status = status
    campaign.save(update_fields=["status"])
    return campaign
