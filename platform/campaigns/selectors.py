"""Reads of campaigns for pages, the API and the captioner board."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q

from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.rubrics import dimension_of
from catalog.models import Dataset, System
from catalog.visibility import is_staff, references_visible, visible_q


def counted_q(*, to_annotation: str = "") -> Q:
    """Tasks (over the path `to_annotation`, "" on Annotation itself) whose captions everyone may
    see now: what every count and result is made of. A task on a submission withdrawn or made
    private since counts no more (no count depends on hidden work; tests/platform/security/test_leaks.py)."""
    return visible_q(None, to_system=f"{to_annotation}caption__system__") & (
        Q(**{f"{to_annotation}other__isnull": True}) | visible_q(None, to_system=f"{to_annotation}other__system__")
    )


def campaigns_visible(viewer):
    """The campaigns `viewer` may see, with their answer counts (counted_q)."""
    counted = Q(annotations__status=Annotation.Status.ANSWERED) & counted_q(to_annotation="annotations__")
    return (
        Campaign.objects.visible_to(viewer)
        .select_related("dataset")
        .annotate(
            answers=Count("annotations", filter=counted),
            annotator_count=Count("annotations__annotator", filter=counted, distinct=True),
        )
    )


def may_organise(campaign: Campaign, viewer) -> bool:
    """Staff, or the campaign's creator: who reads which accounts can be given what."""
    return is_staff(viewer) or (getattr(viewer, "is_authenticated", False) and campaign.created_by_id == viewer.pk)


def campaign_systems_shown(campaign: Campaign, viewer) -> list[System]:
    """The campaign's systems `viewer` may see (catalog.visibility, read live)."""
    return list(System.objects.visible_to(viewer).filter(campaigns=campaign).order_by("name"))


@dataclass(frozen=True)
class PeopleColumn:
    """A live campaign as a captioner board's people column: its label, the campaign, each system's
    cell, how many answers it is made of and the annotators' agreement (α; None in an arena)."""

    label: str  # what the board's people header says under "People"
    campaign: Campaign
    cells: dict[int, dict]  # system id -> the board's cell
    answers: dict[int, int]  # system id -> the ratings (or comparisons) its cell is made of
    alpha: dict | None
    alpha_note: str = ""
    comparisons: int = 0  # an arena's: each one is two systems' answer

    def answers_over(self, systems) -> int:
        """The ratings the cells of `systems` are made of (an arena: its comparisons)."""
        return self.comparisons if self.campaign.is_arena else sum(self.answers.get(s, 0) for s in systems)


@dataclass(frozen=True)
class BoardPeople:
    """What a dataset's campaigns give its captioner board: the chosen campaign's column once it is
    eligible (else None), and, while a chosen campaign is not, why (`pending`)."""

    column: PeopleColumn | None
    pending: str = ""


def board_people(dataset: Dataset) -> BoardPeople:
    """The campaign an organiser chose for the dataset's board (`Campaign.on_board`), as its people
    column once it is eligible (people_eligibility): until then, and without a chosen campaign, the
    board shows the dataset's imported judgments. Every system's cell, before visibility: the board
    keeps the rows its viewer may see."""
    campaign = Campaign.objects.filter(dataset=dataset, on_board=True).first()
    if campaign is None:
        return BoardPeople(None)
    results = CampaignResults.objects.filter(campaign=campaign).first()
    payload = results.payload if results is not None else {}
    problem = people_eligibility(campaign, payload)
    if problem:
        return BoardPeople(None, f"{campaign.title} will replace this column once {problem}")
    noun = "comparisons" if campaign.is_arena else "ratings"
    people = payload.get("people") or {}
    cells = {
        int(system): {
            "value": cell["value"],
            "state": "value",
            "note": f"{cell['n']:,} {noun} in {campaign.title}",
            "low": cell.get("low"),
            "high": cell.get("high"),
        }
        for system, cell in people.items()
    }
    agreement = (payload.get("agreement") or {}).get("mean")
    note = "an arena compares each pair of captions once: no agreement between annotators to estimate"
    return BoardPeople(
        PeopleColumn(
            people_label(campaign),
            campaign,
            cells,
            {int(system): int(cell.get("n") or 0) for system, cell in people.items()},
            agreement,
            note if campaign.is_arena else "",
            int((payload.get("bradley_terry") or {}).get("comparisons") or 0),
        )
    )


def board_status(campaign: Campaign) -> str:
    """What the campaign still lacks to be its board's people column (people_eligibility), read
    from its stored results as the board reads them (not a viewer's filtered copy)."""
    results = CampaignResults.objects.filter(campaign=campaign).values_list("payload", flat=True).first()
    return people_eligibility(campaign, results or {})


def people_eligibility(campaign: Campaign, payload: dict) -> str:
    """What a campaign still lacks to be a board's people column, in words ("" when nothing): every
    system it ranks needs CAPBENCH_PEOPLE_IMAGES images whose caption got CAPBENCH_PEOPLE_ANSWERS
    answers (ratings, or comparisons in an arena), and a rating campaign an agreement estimate."""
    answers, images = settings.CAPBENCH_PEOPLE_ANSWERS, settings.CAPBENCH_PEOPLE_IMAGES
    people = payload.get("people") or {}
    if not people:
        return "it has answers"
    answered = payload.get("answered") or {}
    short = [
        system
        for system in people
        if sum(count for times, count in (answered.get(str(system)) or {}).items() if int(times) >= answers) < images
    ]
    if short:
        return (
            f"every system it ranks has {images} images with {answers} answers each "
            f"({len(short)} of {len(people)} have fewer)"
        )
    if not campaign.is_arena and not (payload.get("agreement") or {}).get("mean"):
        return "its annotators' agreement can be estimated (captions rated twice or more)"
    return ""


def people_label(campaign: Campaign) -> str:
    if campaign.is_arena:
        return f"{campaign.title}: arena strength (0-100)"
    rubric = [dimension_of(data) for data in campaign.rubric]
    scale = f"{rubric[0].low}-{rubric[0].high}" if rubric else ""
    return f"{campaign.title}: mean rating ({scale})"


def campaign_of_protocol(protocol: str) -> Campaign | None:
    """The campaign whose correlations are stored under `protocol` ("campaign-<id>/live@1")."""
    head = protocol.partition("/")[0]
    if not head.startswith("campaign-") or not head[len("campaign-") :].isdigit():
        return None
    return Campaign.objects.filter(pk=int(head[len("campaign-") :])).first()


def campaign_results(campaign: Campaign, viewer) -> dict | None:
    """The campaign's stored results as `viewer` may read them: people cells of the systems they
    may see; per-annotator rows (pseudonyms) and agreement only where the dataset's judgments are
    readable (a hidden test set's are staff's)."""
    results = CampaignResults.objects.filter(campaign=campaign).first()
    if results is None:
        return None
    payload = dict(results.payload)
    shown = {str(system.pk) for system in campaign_systems_shown(campaign, viewer)}
    payload["people"] = {system: cell for system, cell in (payload.get("people") or {}).items() if system in shown}
    if not references_visible(campaign.dataset, viewer):
        payload.pop("annotators", None)
        payload.pop("agreement", None)
    payload["computed_at"] = results.computed_at
    return payload
