"""What each annotator can be given in a campaign, and why the rest is left out
(docs/human-evaluation.md, "What an annotator can be given").

The rules are assignment's (campaigns/services/assignment.py), counted here rather than applied:
a caption is left out when its system is not shown to everyone any more (made private or
withdrawn), when its system is the annotator's own or a linked account's (the sock-puppet rule),
or when its image has no picture (campaigns/pictures.py). Each caption is counted under the first of
these that applies, in that order. The organiser reads it on the campaign's page before anyone
finds nothing to do; an annotator who can be given nothing reads why on the annotation page."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Count

from campaigns.models import Annotation, Campaign
from campaigns.pictures import pictured_q
from campaigns.services.assignment import excluded_systems
from campaigns.services.identity import linked_accounts
from catalog.models import Caption, System

HIDDEN = "systems no longer shown to everyone (made private or withdrawn)"
LINKED = "the annotator's own systems or a linked account's (the same address recently)"
NO_PICTURE = "captions of images without a picture"
ROWS_SHOWN = 30  # the organiser's table lists at most this many accounts


@dataclass(frozen=True)
class Exclusion:
    reason: str
    systems: int  # systems left out whole for this reason
    captions: int


@dataclass(frozen=True)
class Reach:
    """What one annotator can be given: systems and captions, what is left out and why, and, when
    nothing can be given, why (`nothing`, `nothing_for_organiser`)."""

    systems: int
    captions: int
    exclusions: tuple[Exclusion, ...]
    why_nothing: str = ""  # a key of _WHY, "" when something can be given

    @property
    def nothing(self) -> str:
        """Why nothing can be given, in the annotator's words ("" when something can)."""
        return _WHY[self.why_nothing][0] if self.why_nothing else ""

    @property
    def nothing_for_organiser(self) -> str:
        return _WHY[self.why_nothing][1] if self.why_nothing else ""


@dataclass(frozen=True)
class _Counts:
    """The campaign's systems with their captions on its dataset, read once for every annotator."""

    total: dict[int, int]  # system id -> captions
    pictured: dict[int, int]  # system id -> captions whose image has a picture
    shown: frozenset[int]  # the systems everyone may see


def _counts(campaign: Campaign) -> _Counts:
    systems = list(campaign.systems.order_by().values_list("id", flat=True))
    rows = (
        Caption.objects.filter(item__dataset_id=campaign.dataset_id, system_id__in=systems)
        .order_by()
        .values("system_id")
        .annotate(total=Count("id"), pictured=Count("id", filter=pictured_q(to_item="item__")))
    )
    total, pictured = dict.fromkeys(systems, 0), dict.fromkeys(systems, 0)
    for row in rows:
        total[row["system_id"]], pictured[row["system_id"]] = row["total"], row["pictured"]
    shown = System.objects.visible_to(None).filter(pk__in=systems).values_list("id", flat=True)
    return _Counts(total, pictured, frozenset(shown))


def _reach(campaign: Campaign, counts: _Counts, excluded: set[int]) -> Reach:
    """`excluded`: the systems the annotator may not judge (assignment.excluded_systems)."""
    hidden = set(counts.total) - counts.shown
    theirs = counts.shown & excluded
    left = counts.shown - theirs
    given = {system for system in left if counts.pictured[system]}
    exclusions = (
        Exclusion(HIDDEN, len(hidden), sum(counts.total[s] for s in hidden)),
        Exclusion(LINKED, len(theirs), sum(counts.total[s] for s in theirs)),
        Exclusion(NO_PICTURE, len(left - given), sum(counts.total[s] - counts.pictured[s] for s in left)),
    )
    captions = sum(counts.pictured[s] for s in given)
    reach = Reach(len(given), captions, tuple(e for e in exclusions if e.captions or e.systems))
    needed = 2 if campaign.is_arena else 1
    if len(given) >= needed:
        return reach
    return Reach(reach.systems, reach.captions, reach.exclusions, _nothing(counts, theirs))


_WHY = {  # why nothing can be given: (the annotator's words, the organiser's)
    "empty": ("this campaign has no systems to judge", "the campaign has no systems"),
    "hidden": (
        "none of this campaign's systems is shown to everyone any more (made private or withdrawn)",
        "no system is shown to everyone any more",
    ),
    "theirs": (
        "every system in this campaign belongs to you or an account linked to yours (used from the same address "
        "recently), and nobody judges their own captions",
        "every system is theirs or a linked account's",
    ),
    "pictures": (
        "none of the images of the systems you may judge has a picture yet, and a caption is never shown alone",
        "no image of the systems they may judge has a picture",
    ),
    "arena": (
        "an arena compares two systems' captions of one image, and only one system in this campaign can be given "
        "to you (the others are yours or a linked account's, withdrawn, or without pictures)",
        "an arena needs two systems, and one is left to them",
    ),
}


def _nothing(counts: _Counts, theirs: frozenset[int]) -> str:
    """Why an annotator can be given nothing: the first reason that explains it (a key of _WHY)."""
    if not counts.total:
        return "empty"
    if not counts.shown:
        return "hidden"
    if theirs == counts.shown:
        return "theirs"
    if not any(counts.pictured[s] for s in counts.shown - theirs):
        return "pictures"
    return "arena"  # a single system left in an arena: one caption of an image has no opponent


def annotator_reach(campaign: Campaign, user_id: int) -> Reach:
    """What the annotator can be given in the campaign (whatever they have answered already)."""
    return _reach(campaign, _counts(campaign), excluded_systems(campaign, user_id))


@dataclass(frozen=True)
class CampaignReach:
    """The organiser's view: the campaign's systems and captions, what any account without a
    system of its own can be given (`anyone`; None for an invited-only campaign), and each account
    that matters: the invited annotators, or those who have annotated, the systems' owners and the
    accounts linked to them."""

    systems: int
    captions: int
    anyone: Reach | None
    accounts: list[tuple[str, Reach]]
    more: int  # accounts beyond ROWS_SHOWN, not listed


def _accounts(campaign: Campaign) -> list[int]:
    if campaign.audience == Campaign.Audience.INVITED:
        return list(campaign.annotators.values_list("id", flat=True))
    people = set(Annotation.objects.filter(campaign=campaign).values_list("annotator_id", flat=True))
    owners = set(campaign.systems.filter(submission__isnull=False).values_list("submission__owner_id", flat=True))
    for owner in owners:
        people |= linked_accounts(owner)
    return sorted(people)


def campaign_reach(campaign: Campaign) -> CampaignReach:
    counts = _counts(campaign)
    users = get_user_model().objects.filter(pk__in=_accounts(campaign)).order_by("username")
    listed = list(users[:ROWS_SHOWN])
    anyone = None if campaign.audience == Campaign.Audience.INVITED else _reach(campaign, counts, set())
    return CampaignReach(
        systems=len(counts.total),
        captions=sum(counts.total.values()),
        anyone=anyone,
        accounts=[(user.username, _reach(campaign, counts, excluded_systems(campaign, user.pk))) for user in listed],
        more=max(0, users.count() - len(listed)),
    )
