"""Reads of campaigns for pages, the API and the captioner board."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.rubrics import dimension_of
from catalog.models import Dataset, System
from catalog.visibility import references_visible, visible_q


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


def campaign_systems_shown(campaign: Campaign, viewer) -> list[System]:
    """The campaign's systems `viewer` may see (catalog.visibility, read live)."""
    return list(System.objects.visible_to(viewer).filter(campaigns=campaign).order_by("name"))


@dataclass(frozen=True)
class PeopleColumn:
    label: str  # what the board's people header says under "People"
    campaign: Campaign
    cells: dict[int, dict]  # system id -> the board's cell


def board_people(dataset: Dataset) -> PeopleColumn | None:
    """The people column a captioner board shows from live evaluation: the newest campaign of the
    dataset whose results have a number for some system (every system's cell, before visibility:
    the board keeps the rows its viewer may see)."""
    found = (
        CampaignResults.objects.filter(campaign__dataset=dataset)
        .select_related("campaign")
        .order_by("-campaign__created_at")
    )
    for results in found:
        people = results.payload.get("people") or {}
        if not people:
            continue
        campaign = results.campaign
        noun = "comparisons" if campaign.is_arena else "ratings"
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
        return PeopleColumn(people_label(campaign), campaign, cells)
    return None


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
