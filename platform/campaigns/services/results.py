"""A campaign's results, computed again by a throttled refresh (campaigns.services.refresh) and kept
in CampaignResults (docs/human-evaluation.md, "Results"):

- annotator quality: answers, time per answer, gold accuracy, and who is flagged (gold accuracy
  below the campaign's `gold_pass` after `gold_minimum` gold answers); flagged annotators' answers
  are left out of everything below when the campaign says so;
- agreement (rating): Krippendorff's α per dimension (interval level, captions as units) with a
  95% unit-bootstrap interval;
- the people column: per system the mean rating (the mean of the rubric's dimensions) with a 95%
  image-bootstrap interval, or (arena) its Bradley–Terry strength with a 95% image-bootstrap interval;
- the meta-evaluation, under the campaign's "live" protocol: every public metric's correlations with
  the ratings (per dimension and their mean, as for imported ratings: scoring's
  `rating_dimension_cells`), or with the arena's choices (pairwise accuracy per comparison; system
  level, the metric's board numbers against the Bradley–Terry strengths).

Only captions everyone may see count, read at every refresh: a submission made private or
withdrawn leaves the results at the next one (and its ratings stay stored); every read drops it at
once (campaigns.selectors.results_shown, from an arena's games kept per opponent).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

import numpy as np
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from campaigns.events import results_changed
from campaigns.models import Annotation, Campaign, CampaignResults
from campaigns.rubrics import dimension_of
from campaigns.selectors import counted_q
from campaigns.services.identity import pseudonym
from campaigns.services.quality import annotator_quality
from capbench_eval.metaeval.agreement import krippendorff_alpha_interval
from capbench_eval.metaeval.bradley_terry import bradley_terry
from capbench_eval.metaeval.correlation import pearson
from capbench_eval.metaeval.kendall import kendall_tau_b
from capbench_eval.metaeval.protocols import RATING_STATISTICS, Protocol
from capbench_eval.metaeval.system_level import MIN_SYSTEMS
from catalog.models import Caption, Judgment
from scoring.models import CorrelationResult, Metric, Score
from scoring.selectors import system_values_shown
from scoring.services.correlations import (
    correlations_store,
    dataset_significance,
    pairwise_cells,
    rating_dimension_cells,
    results_revision_hold,
)
from scoring.services.numbers import mean_interval

REFRESH_LOCK = 21_001  # the advisory lock class of campaign refreshes (the second key is the campaign)
MEAN = "mean"  # the dimension that averages a rating's rubric dimensions
ARENA = "arena"  # the dimension of an arena's correlations


def campaign_protocol(campaign: Campaign) -> Protocol:
    """The campaign's protocol: the name "live" (the metric board's live tab), its key the campaign's."""
    name, _, version = campaign.protocol_key.rpartition("/")[2].partition("@")
    statistics_ = ("accuracy", "accuracy_ties_half") if campaign.is_arena else RATING_STATISTICS
    rows = "one row per comparison" if campaign.is_arena else "one row per rating (annotator), metric score repeated"
    return Protocol(campaign.protocol_key.partition("/")[0], name, version, statistics_, rows, "the item's references")


def _visible_captions(campaign: Campaign) -> dict[int, tuple[int, int]]:
    """caption id -> (item id, system id) of the campaign's captions everyone may see now."""
    rows = (
        Caption.objects.visible_to(None)
        .filter(item__dataset_id=campaign.dataset_id, system__in=campaign.systems.all())
        .values_list("id", "item_id", "system_id")
    )
    return {caption: (item, system) for caption, item, system in rows}


def _metric_scores(campaign: Campaign, captions: set[int]) -> dict[Metric, dict[int, float | None]]:
    """Per public metric with scores on the captions (its current version): caption id -> score,
    negated where lower is better (a correlation reads "higher agrees with people")."""
    found: dict[Metric, dict[int, float | None]] = {}
    metrics = Metric.objects.visible_to(None).listed().filter(current_version__isnull=False)
    for metric in metrics.select_related("current_version"):
        rows = Score.objects.filter(metric_version=metric.current_version, caption_id__in=captions).values_list(
            "caption_id", "value"
        )
        sign = 1.0 if metric.higher_is_better else -1.0
        scores = {caption: None if value is None else sign * value for caption, value in rows}
        if any(value is not None for value in scores.values()):
            found[metric] = scores
    return found


def _rating_results(campaign: Campaign, captions: dict, excluded: set[str]) -> dict:
    rubric = [dimension_of(data) for data in campaign.rubric]
    rows = (
        Judgment.collected.collected_in(campaign.source)
        .filter(caption_id__in=list(captions))
        .exclude(annotator__in=excluded)
        .order_by("id")
        .values_list("caption_id", "annotator", "dimension", "value")
    )
    by_dimension: dict[str, list[tuple]] = defaultdict(list)
    per_rating: dict[tuple[int, str], list[float]] = defaultdict(list)
    for caption, annotator, dimension, value in rows:
        item, system = captions[caption]
        by_dimension[dimension].append((caption, value, item, system, "campaign", annotator))
        per_rating[(caption, annotator)].append(value)
    by_dimension[MEAN] = [
        (caption, float(np.mean(values)), captions[caption][0], captions[caption][1], "campaign", annotator)
        for (caption, annotator), values in per_rating.items()
        if len(values) == len(rubric)
    ]
    agreement = {}
    for dimension in [*(d.key for d in rubric), MEAN]:
        ratings = [(row[0], row[5], row[1]) for row in by_dimension.get(dimension, [])]
        interval = krippendorff_alpha_interval(ratings, "interval") if ratings else None
        found = _interval_json(interval)
        if found is not None:
            found["ratings"] = len(ratings)
            found["captions"] = len({row[0] for row in ratings})
        agreement[dimension] = found
    people = {}
    per_system: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for _caption, value, item, system, _, _ in by_dimension[MEAN]:
        per_system[system].append((value, item))
    for system, pairs in per_system.items():
        values = np.array([value for value, _ in pairs])
        items = [item for _, item in pairs]
        low, high = mean_interval(values, items) if len(set(items)) > 1 else (None, None)
        people[system] = {"value": float(values.mean()), "low": low, "high": high, "n": len(values)}
    cells_source = {d: [row[:5] for row in rows_] for d, rows_ in by_dimension.items()}
    complete = Counter(
        caption for caption, _annotator in per_rating if len(per_rating[(caption, _annotator)]) == len(rubric)
    )
    answered = _answered(captions, complete)
    return {"agreement": agreement, "people": people, "rows": cells_source, "answered": answered}


def _answered(captions: dict[int, tuple[int, int]], answers: Counter) -> dict[str, dict[str, int]]:
    """Per system, how many images got how many answers (their caption's most): {"3": 40, …}, what
    a board's people column is allowed from (campaigns.selectors.people_eligibility)."""
    most: dict[tuple[int, int], int] = {}
    for caption, count in answers.items():
        item, system = captions[caption]
        most[(system, item)] = max(most.get((system, item), 0), count)
    histograms: dict[str, Counter] = defaultdict(Counter)
    for (system, _item), count in most.items():
        histograms[str(system)][str(count)] += 1
    return {system: dict(found) for system, found in histograms.items()}


def _interval_json(interval) -> dict | None:
    if interval is None or interval.value is None or np.isnan(interval.value):
        return None
    finite = [None if np.isnan(x) else float(x) for x in (interval.low, interval.high)]
    return {"value": float(interval.value), "low": finite[0], "high": finite[1], "replicates": interval.replicates}


def _arena_comparisons(campaign: Campaign, captions: dict, excluded_users: set[int]) -> list[tuple]:
    """(left caption, right caption, winner, item, left system, right system) of the real
    (not gold) comparisons on captions everyone may see."""
    rows = (
        Annotation.objects.filter(campaign=campaign, status=Annotation.Status.ANSWERED, decoy__isnull=True)
        .exclude(annotator_id__in=excluded_users)
        .order_by("id")
        .values_list("caption_id", "other_id", "winner", "item_id")
    )
    return [
        (left, right, winner, item, captions[left][1], captions[right][1])
        for left, right, winner, item in rows
        if left in captions and right in captions
    ]


def _arena_results(campaign: Campaign, comparisons: list[tuple], captions: dict[int, tuple[int, int]]) -> dict:
    systems = sorted(campaign.systems.values_list("id", flat=True))
    if not comparisons:
        return {"people": {}, "bradley_terry": None, "answered": {}}
    answered = _answered(captions, Counter(caption for row in comparisons for caption in row[:2]))
    fitted = bradley_terry(
        [(left_system, right_system, winner, item) for _, _, winner, item, left_system, right_system in comparisons],
        systems,
    )
    against = _games_against(comparisons)
    people = {}
    for rating in fitted.ratings:
        if rating.comparisons == 0:
            continue
        people[int(str(rating.system))] = {
            "value": rating.strength,
            "low": _finite(rating.interval.low),
            "high": _finite(rating.interval.high),
            "n": rating.comparisons,
            "theta": rating.theta,
            "rank": rating.rank,
            "wins": rating.wins,
            "losses": rating.losses,
            "ties": rating.ties,
            "against": against[int(str(rating.system))],
        }
    return {
        "people": people,
        "answered": answered,
        "bradley_terry": {
            "alpha": fitted.alpha,
            "comparisons": fitted.comparisons,
            "items": fitted.items,
            "replicates": fitted.replicates,
            "seed": fitted.seed,
        },
    }


def _games_against(comparisons: list[tuple]) -> dict[int, dict[str, list[int]]]:
    """Per system, per opponent (its id as a string): [wins, losses, ties] in their games. Read with
    the results (campaigns.selectors.campaign_results), they let the counts leave out the games
    against a system hidden since this refresh."""
    games: dict[int, dict[str, list[int]]] = defaultdict(dict)
    for _, _, winner, _, left, right in comparisons:
        for system, opponent, won in ((left, right, "left"), (right, left, "right")):
            counts = games[system].setdefault(str(opponent), [0, 0, 0])
            counts[0 if winner == won else 2 if winner == "tie" else 1] += 1
    return games


def _finite(value: float | None) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def _arena_cells(chosen: Protocol, comparisons: list[tuple], scores: dict) -> list[dict]:
    """Pairwise accuracy of the metric on the comparisons people decided (ties left out), as for
    an imported pairwise dataset (scoring's `pairwise_cells`)."""
    decided = [
        (scores.get(left), scores.get(right), "a" if winner == "left" else "b", ARENA, item)
        for left, right, winner, item, _, _ in comparisons
        if winner in ("left", "right")
    ]
    if sum(a is not None and b is not None for a, b, *_ in decided) < 3:
        return []
    return pairwise_cells(chosen, decided)


def _system_level_cells(chosen: Protocol, dimension: str, people: dict, values: dict[int, float]) -> list[dict]:
    """The metric's board numbers against the people column's, over the systems that have both."""
    systems = sorted(set(people) & set(values))
    if len(systems) < MIN_SYSTEMS:
        return []
    human = np.array([people[s]["value"] for s in systems], dtype=float)
    metric = np.array([values[s] for s in systems], dtype=float)
    return [
        {
            "dimension": dimension,
            "statistic": name,
            "protocol": chosen.key,
            "level": CorrelationResult.Level.SYSTEM,
            "value": _finite(function(human, metric)),
            "low": None,
            "high": None,
            "n": len(systems),
            "left_out": 0,
            "tie_rate": None,
            "detail": {"systems": len(systems), "against": "the campaign's people column"},
        }
        for name, function in (("pearson", pearson), ("tau_b", kendall_tau_b))
    ]


def campaign_refresh(*, campaign_id: int) -> CampaignResults | None:
    """Compute the campaign's results again. Everything is read from one snapshot of the database
    (a read-only REPEATABLE READ transaction: answers arriving meanwhile wait for the next refresh
    instead of being half counted), then written in a transaction of its own (writing under the
    snapshot would fail whenever another correlation was written meanwhile). One refresh of a
    campaign runs at a time. The results remember when their snapshot was taken (`as_of`): the
    sweep redoes every campaign whose refresh was wanted after that."""
    if connection.in_atomic_block:  # a caller's transaction (a test's): its snapshot rules
        return _refresh_locked(campaign_id, snapshot=False)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [REFRESH_LOCK, campaign_id])
    try:
        return _refresh_locked(campaign_id, snapshot=True)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [REFRESH_LOCK, campaign_id])


def _refresh_locked(campaign_id: int, *, snapshot: bool) -> CampaignResults | None:
    as_of = timezone.now()  # before the snapshot: a refresh wanted later is not covered by this one
    if snapshot:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            computed = _compute(campaign_id)
    else:
        computed = _compute(campaign_id)
    if computed is None:
        return None
    campaign, payload, cells = computed
    results = _store(campaign, payload, cells, as_of)
    dataset_significance(dataset=campaign.dataset)
    return results


def _compute(campaign_id: int) -> tuple[Campaign, dict, dict[Metric, list[dict]]] | None:
    campaign = Campaign.objects.select_related("dataset").filter(pk=campaign_id).first()
    if campaign is None:
        return None
    quality = annotator_quality(campaign)
    flagged_users = {user for user, entry in quality.items() if entry["flagged"]}
    excluded_users = flagged_users if campaign.exclude_flagged else set()
    captions = _visible_captions(campaign)
    chosen = campaign_protocol(campaign)
    scores = _metric_scores(campaign, set(captions))
    shown = system_values_shown(dataset=campaign.dataset)
    cells: dict[Metric, list[dict]] = {}
    payload: dict = {}
    if campaign.is_arena:
        comparisons = _arena_comparisons(campaign, captions, excluded_users)
        payload = _arena_results(campaign, comparisons, captions)
        for metric, metric_scores in scores.items():
            cells[metric] = _arena_cells(chosen, comparisons, metric_scores)
        people_dimension = ARENA
    else:
        excluded = {pseudonym(campaign, user) for user in excluded_users}
        payload = _rating_results(campaign, captions, excluded)
        rows = payload.pop("rows")
        for metric, metric_scores in scores.items():
            cells[metric] = [
                cell
                for dimension, dimension_rows in rows.items()
                for cell in rating_dimension_cells(dimension, chosen, dimension_rows, metric_scores)
            ]
        people_dimension = MEAN
    for metric in scores:
        sign = 1.0 if metric.higher_is_better else -1.0
        values = {
            system: sign * found.value
            for (system, slug), found in shown.items()
            if slug == metric.slug and found.value is not None
        }
        cells[metric] += _system_level_cells(chosen, people_dimension, payload["people"], values)
    seconds = [entry["median_seconds"] for entry in quality.values() if entry["median_seconds"] is not None]
    answered = Annotation.objects.filter(counted_q(), campaign=campaign, status=Annotation.Status.ANSWERED)
    times = [
        (answered_at - shown_at).total_seconds()
        for shown_at, answered_at in answered.values_list("shown_at", "answered_at")
        if answered_at is not None
    ]
    payload.update(
        {
            "annotators": {
                pseudonym(campaign, user): {**entry, "excluded": user in excluded_users}
                for user, entry in quality.items()
            },
            "answers": len(times),
            "gold_answers": sum(entry["gold"] for entry in quality.values()),
            "median_seconds": statistics.median(times) if times else None,
            "median_annotator_seconds": statistics.median(seconds) if seconds else None,
            "flagged": len(flagged_users),
            "people": {str(system): cell for system, cell in payload["people"].items()},
            "people_dimension": people_dimension,
            "metrics": sorted(metric.slug for metric, found in cells.items() if found),
        }
    )
    return campaign, payload, cells


def _store(campaign: Campaign, payload: dict, cells: dict[Metric, list[dict]], as_of) -> CampaignResults:
    chosen = campaign_protocol(campaign)
    with transaction.atomic():
        results_revision_hold()  # before the campaign's rows: every writer locks in one order
        kept: list[int] = []
        for metric, metric_cells in cells.items():
            if metric_cells and metric.current_version is not None:
                stored = correlations_store(
                    dataset=campaign.dataset, metric_version=metric.current_version, cells=metric_cells
                )
                kept += [result.pk for result in stored]
        CorrelationResult.objects.filter(protocol=chosen.key).exclude(pk__in=kept).delete()
        results, _ = CampaignResults.objects.update_or_create(
            campaign=campaign, defaults={"payload": payload, "as_of": as_of}
        )
        dataset_id = campaign.dataset_id
        transaction.on_commit(lambda: results_changed.send(Campaign, dataset_id=dataset_id, campaign_id=campaign.pk))
    return results


def campaigns_refresh_stale() -> int:
    """Refresh every campaign whose refresh was wanted (an answer, a change of a submission's
    visibility) after its results' snapshot, or that has none: the sweep, when a scheduled refresh
    was lost (the broker or Valkey away) or failed."""
    stale = Campaign.objects.filter(refresh_wanted_at__isnull=False).filter(
        Q(results__isnull=True) | Q(refresh_wanted_at__gt=F("results__as_of"))
    )
    refreshed = 0
    for campaign_id in stale.values_list("pk", flat=True):
        campaign_refresh(campaign_id=campaign_id)
        refreshed += 1
    return refreshed
