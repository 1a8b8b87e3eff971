"""Where a metric disagrees with people: the items of a dataset on which the metric orders the
captions against the human ordering, the most disagreeing first, each with its picture, references,
human ratings and every metric's reading.

Rating datasets: within each item, over its own candidate captions that people rated in the chosen
dimension (the annotators' mean) and that the metric scored, every pair of captions is concordant
(people and the metric order it the same way), discordant (the opposite way), tied by the metric
(people order it, the metric does not) or tied by people. Items rank by discordant pairs, then by
their share of the pairs people order. Pairwise datasets: a pair is discordant where the metric
prefers the caption people did not. Only the dataset's own captions are read (never a submission's),
on datasets the viewer may see.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Avg, Exists, F, OuterRef, QuerySet

from catalog.models import Caption, Dataset, Item, Judgment, PairJudgment
from catalog.visibility import own_q, references_q
from leaderboards.items import Reading
from plumbing.errors import NotFound
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, Score

PER_PAGE = 20
MAX_ROWS = 240  # candidate rows a page holds past its first item
PAIRED = (Dataset.Kind.PAIRWISE, Dataset.Kind.FOIL)
# Means of a few annotators' ratings are compared at this precision (1/3 + 1/3 + 1/3 is 1 here).
HUMAN_DIGITS = 9


@dataclass(frozen=True)
class PairCounts:
    """One item's caption pairs: how people and the metric order them."""

    discordant: int = 0  # people order the pair one way, the metric strictly the other
    concordant: int = 0
    metric_tied: int = 0  # people order it, the metric scores both the same
    people_tied: int = 0  # people rate both the same (pairwise: a tie or no verdict)

    @property
    def ordered(self) -> int:
        """The pairs people order."""
        return self.discordant + self.concordant + self.metric_tied

    @property
    def share(self) -> float:
        """Discordant pairs among those people order (0 where they order none)."""
        return self.discordant / self.ordered if self.ordered else 0.0

    def __add__(self, other: PairCounts) -> PairCounts:
        return PairCounts(
            self.discordant + other.discordant,
            self.concordant + other.concordant,
            self.metric_tied + other.metric_tied,
            self.people_tied + other.people_tied,
        )


def pair_counts(people: Sequence[float], metric: Sequence[float], *, higher_is_better: bool = True) -> PairCounts:
    """Every pair of captions of one item, as people's ratings and the metric's scores order it."""
    human = np.round(np.asarray(people, dtype=float), HUMAN_DIGITS)
    scores = np.asarray(metric, dtype=float) * (1.0 if higher_is_better else -1.0)
    first, second = np.triu_indices(len(human), k=1)
    by_people = np.sign(human[first] - human[second])
    by_metric = np.sign(scores[first] - scores[second])
    ordered = by_people != 0
    agreement = by_people * by_metric
    return PairCounts(
        discordant=int(np.count_nonzero(ordered & (agreement < 0))),
        concordant=int(np.count_nonzero(ordered & (agreement > 0))),
        metric_tied=int(np.count_nonzero(ordered & (by_metric == 0))),
        people_tied=int(np.count_nonzero(~ordered)),
    )


def pair_verdict(winner: str, votes_a: int | None = None, votes_b: int | None = None) -> str:
    """The caption people preferred, "a" or "b"; "" for a tie. A pair stored with votes only is
    decided by their majority."""
    if winner in (PairJudgment.Winner.A, PairJudgment.Winner.B):
        return winner
    if winner == "" and votes_a is not None and votes_b is not None and votes_a != votes_b:
        return "a" if votes_a > votes_b else "b"
    return ""


@dataclass(frozen=True)
class RankedItem:
    item_id: int
    counts: PairCounts
    candidates: int  # captions compared on it


def ranked_items(found: dict[int, RankedItem]) -> list[RankedItem]:
    """The items with at least one discordant pair: the most discordant pairs first, then the
    largest share of discordant among the pairs people order, then the item's id."""
    return sorted(
        (ranked for ranked in found.values() if ranked.counts.discordant),
        key=lambda r: (-r.counts.discordant, -r.counts.share, r.item_id),
    )


def scored_datasets(*, metric: Metric, viewer) -> list[Dataset]:
    """The datasets with human judgments the viewer may see and read (not a hidden test set, unless
    staff) on whose own captions the metric has scores."""
    # Read from the small tables that record the scoring (a dataset job, an upload's job record, the
    # correlations), never by probing the scores themselves: on a large store that probe cost seconds
    # per request, and the leak crawl opens this page hundreds of times.
    jobs = EvaluationJob.objects.filter(metric_version__metric=metric, system__isnull=True, dataset=OuterRef("pk"))
    correlated = CorrelationResult.objects.filter(metric_version__metric=metric, dataset=OuterRef("pk"))
    return list(
        Dataset.objects.visible_to(viewer)
        .filter(references_q(viewer))
        .filter(kind__in=[Dataset.Kind.RATING, *PAIRED])
        .filter(Exists(jobs) | Exists(correlated))
        .order_by("title")
    )


def scored_version(*, metric: Metric, dataset: Dataset) -> MetricVersion | None:
    """The version the metric page reads (the newest with a finished job over the whole dataset),
    else the newest version with scores of the dataset's own captions."""
    done = (
        metric.versions.filter(jobs__dataset=dataset, jobs__system__isnull=True, jobs__status=EvaluationJob.Status.DONE)
        .order_by("-created_at", "-pk")
        .first()
    )
    if done is not None:
        return done
    scored = Score.objects.own().filter(metric_version=OuterRef("pk"), caption__item__dataset=dataset)
    return metric.versions.filter(Exists(scored)).order_by("-created_at", "-pk").first()


def _own_captions(dataset: Dataset) -> QuerySet[Caption]:
    return Caption.objects.own().filter(item__dataset=dataset)


def _scores(version: MetricVersion, dataset: Dataset) -> dict[int, float]:
    """caption id -> the version's score, for the dataset's own captions it scored (not failed)."""
    # Joined, not `caption__in=<own captions>`: the subquery form costs three times as much.
    rows = (
        Score.objects.own()
        .filter(metric_version=version, caption__item__dataset=dataset, value__isnull=False)
        .values_list("caption_id", "value")
    )
    return {caption: value for caption, value in rows if value is not None and not math.isnan(value)}


def _rating_counts(
    dataset: Dataset, dimension: str, version: MetricVersion, *, higher_is_better: bool
) -> tuple[dict[int, RankedItem], dict[int, float], dict[int, float]]:
    """Per item with 2+ rated and scored captions, its pair counts; and each such caption's mean
    rating and score (one query: the judgments joined with the version's score of their caption)."""
    rows = (
        Judgment.objects.own()
        .filter(
            caption__item__dataset=dataset,
            dimension=dimension,
            caption__scores__metric_version=version,
            caption__scores__value__isnull=False,
        )
        .order_by()
        .values_list("caption__item_id", "caption_id", "caption__scores__value")
        .annotate(mean=Avg("value"))
    )
    people: dict[int, float] = {}
    scores: dict[int, float] = {}
    by_item: dict[int, list[int]] = defaultdict(list)
    for item_id, caption_id, score, mean in rows:
        if math.isnan(score):
            continue
        people[caption_id], scores[caption_id] = mean, score
        by_item[item_id].append(caption_id)
    found = {}
    for item_id, captions in by_item.items():
        if len(captions) < 2:
            continue
        counts = pair_counts(
            [people[c] for c in captions], [scores[c] for c in captions], higher_is_better=higher_is_better
        )
        found[item_id] = RankedItem(item_id, counts, len(captions))
    return found, people, scores


@dataclass(frozen=True)
class Pair:
    item_id: int
    a: int  # caption ids
    b: int
    verdict: str  # "a", "b" or "" (people tie or gave none)
    votes_a: int | None
    votes_b: int | None
    category: str


def _pairs(dataset: Dataset, category: str) -> list[Pair]:
    """The dataset's pairs of two of its own captions (in `category` when given)."""
    pairs = PairJudgment.objects.filter(
        own_q(to_system="caption_a__system__"), own_q(to_system="caption_b__system__"), dataset=dataset
    )
    if category:
        pairs = pairs.filter(category=category)
    return [
        Pair(item, a, b, pair_verdict(winner, votes_a, votes_b), votes_a, votes_b, cat)
        for item, a, b, winner, votes_a, votes_b, cat in pairs.order_by("id").values_list(
            "item_id", "caption_a_id", "caption_b_id", "winner", "votes_a", "votes_b", "category"
        )
    ]


def pair_outcome(pair: Pair, scores: dict[int, float], *, higher_is_better: bool) -> str | None:
    """How the metric reads a pair: "agrees", "disagrees" (it prefers the caption people did not),
    "metric tie", "people tie"; None when the metric did not score both."""
    if pair.a not in scores or pair.b not in scores:
        return None
    if not pair.verdict:
        return "people tie"
    winner, loser = (pair.a, pair.b) if pair.verdict == "a" else (pair.b, pair.a)
    gap = (scores[winner] - scores[loser]) * (1.0 if higher_is_better else -1.0)
    return "agrees" if gap > 0 else "disagrees" if gap < 0 else "metric tie"


OUTCOME_FIELD = {
    "agrees": "concordant",
    "disagrees": "discordant",
    "metric tie": "metric_tied",
    "people tie": "people_tied",
}


def _pairwise_counts(pairs: list[Pair], scores: dict[int, float], *, higher_is_better: bool) -> dict[int, RankedItem]:
    counts: dict[int, dict[str, int]] = defaultdict(lambda: dict.fromkeys(OUTCOME_FIELD.values(), 0))
    captions: dict[int, set[int]] = defaultdict(set)
    for pair in pairs:
        outcome = pair_outcome(pair, scores, higher_is_better=higher_is_better)
        if outcome is None:
            continue
        counts[pair.item_id][OUTCOME_FIELD[outcome]] += 1
        captions[pair.item_id] |= {pair.a, pair.b}
    return {item: RankedItem(item, PairCounts(**fields), len(captions[item])) for item, fields in counts.items()}


@dataclass
class Candidate:
    caption: Caption
    judgments: list[Judgment]  # in the chosen dimension, one per annotator (rating datasets)
    people: float | None  # their mean
    score: float | None  # the chosen metric's
    people_rank: int | None = None  # 1 = rated best among the item's compared captions (ties share)
    metric_rank: int | None = None  # 1 = the metric's best
    cells: list[Reading | None] = field(default_factory=list)  # every other metric, one per column


@dataclass
class PairShown:
    preferred: Caption | None  # None: people tie or gave no verdict
    other: Caption | None
    a: Caption
    b: Caption
    pair: Pair
    outcome: str
    score_a: float | None
    score_b: float | None


@dataclass
class ItemShown:
    item: Item
    counts: PairCounts
    candidates: list[Candidate]
    pairs: list[PairShown] = field(default_factory=list)  # pairwise datasets


@dataclass
class Disagreements:
    metric: Metric
    datasets: list[Dataset]
    dataset: Dataset | None = None
    dimension: str = ""  # rating: the judgment dimension; pairwise: the pairs' category ("": all)
    dimensions: list[str] = field(default_factory=list)
    version: MetricVersion | None = None
    compared: int = 0  # items with a pair to compare (rating: 2+ rated and scored captions)
    totals: PairCounts = PairCounts()
    ranked: int = 0  # items with at least one discordant pair
    items: list[ItemShown] = field(default_factory=list)  # this page's
    columns: list[tuple[str, str]] = field(default_factory=list)  # (slug, name) of the other metrics shown
    page: int = 1
    pages: int = 1

    @property
    def paired(self) -> bool:
        return self.dataset is not None and self.dataset.kind in PAIRED


def _dataset_shown(scored: list[Dataset], slug: str | None, viewer) -> Dataset | None:
    """The dataset of `slug` (NotFound where the viewer may not read its judgments), else the first scored."""
    if not slug:
        return scored[0] if scored else None
    chosen = next((dataset for dataset in scored if dataset.slug == slug), None)
    chosen = chosen or Dataset.objects.visible_to(viewer).filter(references_q(viewer), slug=slug).first()
    if chosen is None:
        raise NotFound("no such dataset")
    return chosen


def metric_disagreements(
    *,
    metric: Metric,
    viewer,
    dataset: str | None = None,
    dimension: str | None = None,
    page: int = 1,
    metrics: QuerySet[Metric] | None = None,
    per_page: int = PER_PAGE,
) -> Disagreements:
    """One page of the items of `dataset` (a slug; the first scored dataset when not given) where
    `metric` disagrees most with people in `dimension` (the dataset's people dimension when not one
    of its own), with every metric of `metrics` (the registered ones by default) read on their
    captions. Raises NotFound when the viewer may not see a dataset of that slug, or may not read
    its judgments (a hidden test set)."""
    found = Disagreements(metric, scored_datasets(metric=metric, viewer=viewer))
    found.dataset = _dataset_shown(found.datasets, dataset, viewer)
    if found.dataset is None:
        return found
    shown = found.dataset
    if shown.kind == Dataset.Kind.RATING:
        found.dimensions = list(shown.dimensions)
        found.dimension = dimension if dimension in found.dimensions else shown.people_dimension or ""
    elif shown.kind in PAIRED:
        categories = PairJudgment.objects.filter(dataset=shown).exclude(category="").order_by("category")
        found.dimensions = list(categories.values_list("category", flat=True).distinct())
        found.dimension = dimension if dimension in found.dimensions else ""
    else:
        return found
    found.version = scored_version(metric=metric, dataset=shown)
    if found.version is None:
        return found
    higher = metric.higher_is_better
    people: dict[int, float] = {}
    scores: dict[int, float] = {}
    pairs: list[Pair] = []
    per_item: dict[int, RankedItem] = {}
    if found.paired:
        scores, pairs = _scores(found.version, shown), _pairs(shown, found.dimension)
        per_item = _pairwise_counts(pairs, scores, higher_is_better=higher)
    elif found.dimension:
        per_item, people, scores = _rating_counts(shown, found.dimension, found.version, higher_is_better=higher)
    ranked = ranked_items(per_item)
    found.compared, found.ranked = len(per_item), len(ranked)
    found.totals = sum((r.counts for r in per_item.values()), PairCounts())
    bounds = page_bounds([r.candidates for r in ranked], per_page=per_page)
    found.pages = len(bounds)
    found.page = min(max(page, 1), found.pages)
    chosen_items = ranked[slice(*bounds[found.page - 1])]
    if chosen_items:
        found.items, found.columns = _shown(
            found, chosen_items, scores, people, pairs, metrics if metrics is not None else _registered()
        )
    return found


def page_bounds(rows: list[int], *, per_page: int = PER_PAGE, max_rows: int = MAX_ROWS) -> list[tuple[int, int]]:
    """(start, stop) of each page of items with `rows` candidate rows each: at most `per_page` items
    and, past the first item, at most `max_rows` rows (Flickr8k-CF has some 48 captions an image:
    20 of its images would be a page of a thousand rows × every metric)."""
    bounds, start, held = [], 0, 0
    for index, count in enumerate(rows):
        if index > start and (index - start == per_page or held + count > max_rows):
            bounds.append((start, index))
            start, held = index, 0
        held += count
    bounds.append((start, len(rows)))
    return bounds


def _registered() -> QuerySet[Metric]:
    return Metric.objects.filter(is_registered=True)


def _shown(
    found: Disagreements,
    chosen: list[RankedItem],
    scores: dict[int, float],
    people: dict[int, float],
    pairs: list[Pair],
    metrics: QuerySet[Metric],
) -> tuple[list[ItemShown], list[tuple[str, str]]]:
    """The page's items as the template shows them."""
    assert found.dataset is not None
    ids = [r.item_id for r in chosen]
    items = Item.objects.select_related("media").filter(dataset=found.dataset).in_bulk(ids)
    own = _own_captions(found.dataset).filter(item_id__in=ids).select_related("system")
    if found.paired:
        compared = {c for p in pairs if p.item_id in items for c in (p.a, p.b)}
    else:
        compared = {c for c in people if c in scores}
    captions = {caption.pk: caption for caption in own.order_by("id") if caption.pk in compared}
    judgments: dict[int, list[Judgment]] = defaultdict(list)
    if not found.paired:
        rated = Judgment.objects.filter(caption_id__in=captions, dimension=found.dimension).order_by("annotator", "id")
        for judgment in rated:
            judgments[judgment.caption_id].append(judgment)
    readings, columns = _readings(list(captions), exclude=found.metric, metrics=metrics)
    by_item: dict[int, list[Candidate]] = defaultdict(list)
    for caption in captions.values():
        candidate = Candidate(caption, judgments[caption.pk], people.get(caption.pk), scores.get(caption.pk))
        candidate.cells = [readings.get((caption.pk, slug)) for slug, _ in columns]
        by_item[caption.item_id].append(candidate)
    shown = []
    for ranked in chosen:
        candidates = by_item[ranked.item_id]
        if not found.paired:
            _rank(candidates, higher_is_better=found.metric.higher_is_better)
            candidates.sort(key=lambda c: (c.people_rank or 0, c.metric_rank or 0, c.caption.pk))
        entry = ItemShown(items[ranked.item_id], ranked.counts, candidates)
        if found.paired:
            entry.pairs = _pairs_shown(ranked.item_id, pairs, captions, scores, found.metric.higher_is_better)
        shown.append(entry)
    return shown, columns


def _rank(candidates: list[Candidate], *, higher_is_better: bool) -> None:
    """Competition ranks (1, 1, 3) by people's mean and by the metric, the best first."""
    sign = 1.0 if higher_is_better else -1.0
    human = [round(c.people, HUMAN_DIGITS) if c.people is not None else None for c in candidates]
    for candidate, mine in zip(candidates, human, strict=True):
        if mine is not None:
            candidate.people_rank = 1 + sum(1 for other in human if other is not None and other > mine)
        if candidate.score is not None:
            candidate.metric_rank = 1 + sum(
                1 for other in candidates if other.score is not None and sign * other.score > sign * candidate.score
            )


def _pairs_shown(
    item_id: int, pairs: list[Pair], captions: dict[int, Caption], scores: dict[int, float], higher_is_better: bool
) -> list[PairShown]:
    """The item's compared pairs, those where the metric disagrees first."""
    order = {"disagrees": 0, "metric tie": 1, "agrees": 2, "people tie": 3}
    shown = []
    for pair in pairs:
        if pair.item_id != item_id or pair.a not in captions or pair.b not in captions:
            continue
        outcome = pair_outcome(pair, scores, higher_is_better=higher_is_better)
        if outcome is None:
            continue
        a, b = captions[pair.a], captions[pair.b]
        preferred, other = (a, b) if pair.verdict == "a" else (b, a) if pair.verdict == "b" else (None, None)
        shown.append(PairShown(preferred, other, a, b, pair, outcome, scores.get(pair.a), scores.get(pair.b)))
    shown.sort(key=lambda p: order[p.outcome])
    return shown


def _readings(
    caption_ids: list[int], *, exclude: Metric, metrics: QuerySet[Metric]
) -> tuple[dict[tuple[int, str], Reading], list[tuple[str, str]]]:
    """Every metric's reading of the captions, under its current version, as the item page reads
    them (number and error; what a metric wrote stays on the item page); the columns by name."""
    rows = (
        Score.objects.filter(
            caption_id__in=caption_ids,
            metric_version=F("metric_version__metric__current_version"),
            metric_version__metric__in=metrics.exclude(pk=exclude.pk),
        )
        .order_by()
        .values_list(
            "caption_id",
            "metric_version__metric__slug",
            "metric_version__metric__name",
            "value",
            "error",
            "metric_version__metric__points",
        )
    )
    readings = {
        (caption, slug): Reading(slug=slug, name=name, value=value, error=error, scale=scale)
        for caption, slug, name, value, error, scale in rows
    }
    columns = sorted({(r.slug, r.name) for r in readings.values()}, key=lambda c: (c[1].lower(), c[0]))
    return readings, columns
