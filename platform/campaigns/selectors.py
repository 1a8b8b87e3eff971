"""Reads of campaigns for pages, the API and the captioner board."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q

from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.rubrics import dimension_of
from catalog.models import Dataset, System
from catalog.visibility import is_staff, references_visible, visible_q
from scoring.models import Metric


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
    board shows the dataset's imported judgments. Every system's cell, before visibility (the board
    keeps the rows its viewer may see: an owner their private system's, as it was), but what everyone
    reads is made of what everyone may see now (results_shown): the cells of the systems public now,
    their counts and the eligibility."""
    campaign = Campaign.objects.filter(dataset=dataset, on_board=True).first()
    if campaign is None:
        return BoardPeople(None)
    stored = CampaignResults.objects.filter(campaign=campaign).values_list("payload", flat=True).first() or {}
    everyone = _shown_to_everyone(campaign)
    payload = results_shown(campaign, stored, everyone)
    problem = people_eligibility(campaign, payload)
    if problem:
        return BoardPeople(None, f"{campaign.title} will replace this column once {problem}")
    noun = "comparisons" if campaign.is_arena else "ratings"
    hidden = {system: cell for system, cell in (stored.get("people") or {}).items() if system not in everyone}
    people = {**hidden, **payload["people"]}
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
    from its stored results as the board reads them (everyone's copy, not the viewer's)."""
    results = CampaignResults.objects.filter(campaign=campaign).values_list("payload", flat=True).first()
    return people_eligibility(campaign, results_shown(campaign, results or {}, _shown_to_everyone(campaign)))


def _shown_to_everyone(campaign: Campaign) -> set[str]:
    return {str(pk) for pk in System.objects.visible_to(None).filter(campaigns=campaign).values_list("pk", flat=True)}


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
    """The campaign's stored results as `viewer` may read them, the visibility rule read now (a
    submission or a submitted metric hidden since the last refresh is gone at once): the systems
    they may see (results_shown), the metrics they may see; per-annotator rows (pseudonyms) and
    agreement only where the dataset's judgments are readable (a hidden test set's are staff's)."""
    results = CampaignResults.objects.filter(campaign=campaign).first()
    if results is None:
        return None
    shown = {str(system.pk) for system in campaign_systems_shown(campaign, viewer)}
    payload = results_shown(campaign, results.payload, shown)
    named = payload.get("metrics") or []
    visible = set(Metric.objects.visible_to(viewer).filter(slug__in=named).values_list("slug", flat=True))
    payload["metrics"] = [slug for slug in named if slug in visible]
    if not references_visible(campaign.dataset, viewer):
        payload.pop("annotators", None)
        payload.pop("agreement", None)
    payload["computed_at"] = results.computed_at
    return payload


ARENA_COUNTS = ("wins", "losses", "ties")


def results_shown(campaign: Campaign, stored: dict, shown: set[str]) -> dict:
    """Stored results with the systems in `shown` (ids as strings) alone: their people cells and
    answer counts. In an arena each cell's comparisons, wins, losses and ties count only its games
    against systems in `shown` (a system left with none is dropped), the ranks are competition
    ranks among those shown (by θ, as bradley_terry ranks) and the comparisons are those between
    them: a system made private or withdrawn since the refresh leaves no gap in the ranks and no
    game in any count. The strengths themselves are fitted again by the refresh its change of
    visibility schedules. A rating's cell is made of its own captions' ratings: nothing to take out."""
    payload = dict(stored)
    people = stored.get("people") or {}
    cells = {system: dict(cell) for system, cell in people.items() if system in shown}
    payload["answered"] = {system: found for system, found in (stored.get("answered") or {}).items() if system in shown}
    if campaign.is_arena:
        split = all("against" in cell for cell in people.values())
        for cell in cells.values():
            against = cell.pop("against", None)
            if against is None:  # stored before the games were kept per opponent: counts cannot be split
                if len(cells) < len(people):
                    for key in ARENA_COUNTS:
                        cell.pop(key, None)
                continue
            games = [counts for opponent, counts in against.items() if opponent in shown]
            for position, key in enumerate(ARENA_COUNTS):
                cell[key] = sum(counts[position] for counts in games)
            cell["n"] = sum(cell[key] for key in ARENA_COUNTS)
        cells = {system: cell for system, cell in cells.items() if cell.get("n", 1) > 0}
        theta = {system: _theta(cell) for system, cell in cells.items()}
        for system, cell in cells.items():
            cell["rank"] = 1 + sum(other > theta[system] for other in theta.values())
        if stored.get("bradley_terry") and split:
            payload["bradley_terry"] = {
                **stored["bradley_terry"],
                "comparisons": sum(cell["n"] for cell in cells.values()) // 2,
            }
    payload["people"] = cells
    return payload


def _theta(cell: dict) -> float:
    """An arena cell's log-strength, to 9 decimals as bradley_terry compares them (its strength, of
    the same order, where a cell lacks it)."""
    found = cell.get("theta")
    return round(float(found if found is not None else cell["value"]), 9)
