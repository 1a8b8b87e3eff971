"""Reads of scores for pages and the API."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from django.db.models import Q

from catalog.models import Caption, Dataset, System
from catalog.visibility import references_visible
from scoring.models import EvaluationJob, Metric, Score, SystemScore
from scoring.shown import Shown


class ShownScore(NamedTuple):
    metric_version_id: int
    value: float | None
    low: float | None
    high: float | None


def system_values_shown(*, dataset: Dataset) -> dict[tuple[int, str], ShownScore]:
    """Per (system id, metric slug) the number of the newest metric version whose job is done:
    while a new version is being computed, the previous one stays on the board (no empty cells in
    between). A dataset job (no system) covers every system of the dataset."""
    finished = set(
        EvaluationJob.objects.filter(dataset=dataset, status=EvaluationJob.Status.DONE).values_list(
            "system_id", "metric_version_id"
        )
    )
    shown: dict[tuple[int, str], ShownScore] = {}
    rows = (
        SystemScore.objects.filter(system__dataset=dataset)
        .order_by("metric_version__created_at", "id")
        .values_list("system_id", "metric_version_id", "metric_version__metric__slug", "value", "low", "high")
    )
    for system_id, version_id, slug, value, low, high in rows:
        if (system_id, version_id) in finished or (None, version_id) in finished:
            shown[(system_id, slug)] = ShownScore(version_id, value, low, high)  # later versions overwrite
    return shown


@dataclass(frozen=True)
class ScoreColumn:
    """A metric as a column of a per-caption table."""

    slug: str
    name: str
    family: str
    points: float  # what its values are multiplied by where people read them (Metric.points)


@dataclass(frozen=True)
class CaptionScore:
    value: float | None  # on the metric's own scale; None: the metric could not score the caption
    error: str
    scale: float

    @property
    def shown(self) -> Shown:
        return Shown(self.value, scale=self.scale)


@dataclass
class CaptionScores:
    """One caption and its scores by metric slug; `cells` follows the table's columns (None: no score)."""

    caption_id: int
    item: str
    system: str
    caption: str
    scores: dict[str, CaptionScore] = field(default_factory=dict)
    cells: list[CaptionScore | None] = field(default_factory=list)


def caption_scores(
    *, caption_ids: list[int], viewer, metric: str | None = None
) -> tuple[list[ScoreColumn], list[CaptionScores]]:
    """The per-caption table of `caption_ids` (in that order): one row per caption, one column per
    metric with a score the viewer may read among them (catalog.visibility: a hidden test set's
    reference-based scores are withheld), only `metric`'s if given. Where a caption has scores of
    several versions of a metric, the newest version's. Two queries, whatever the number of metrics."""
    captions = (  # only those the viewer may read one by one (an open campaign's are blind: catalog.visibility)
        Caption.objects.listed_to(viewer)
        .filter(pk__in=caption_ids)
        .values_list("pk", "item__external_id", "system__slug", "text")
    )
    found = {pk: CaptionScores(pk, item, system, text) for pk, item, system, text in captions}
    scores = Score.objects.visible_to(viewer).filter(
        caption_id__in=list(found), metric_version__metric__in=Metric.objects.visible_to(viewer)
    )
    if metric:
        scores = scores.filter(metric_version__metric__slug=metric)
    columns: dict[str, ScoreColumn] = {}
    for caption_id, slug, name, family, points, value, error in scores.order_by(
        "metric_version__created_at", "metric_version_id"
    ).values_list(
        "caption_id",
        "metric_version__metric__slug",
        "metric_version__metric__name",
        "metric_version__metric__family",
        "metric_version__metric__points",
        "value",
        "error",
    ):
        columns.setdefault(slug, ScoreColumn(slug, name, family, points))
        found[caption_id].scores[slug] = CaptionScore(value, error, points)  # newer versions overwrite
    ordered = sorted(columns.values(), key=lambda column: (column.family, column.name.lower()))
    rows = [found[pk] for pk in caption_ids if pk in found]
    for row in rows:
        row.cells = [row.scores.get(column.slug) for column in ordered]
    return ordered, rows


def score_columns(*, system: System, viewer) -> list[ScoreColumn]:
    """The metrics a system's per-caption table has as columns for `viewer`, known before any row
    is read (a download's header): those of its jobs, less the metrics this server does not
    compute and those whose per-caption scores the viewer may not read (catalog.visibility)."""
    metrics = (
        Metric.objects.visible_to(viewer)
        .filter(  # one filter: the conditions hold for the same job
            Q(versions__jobs__system=system)
            & (
                Q(versions__jobs__status=EvaluationJob.Status.DONE)
                | Q(available=True, versions__jobs__status__in=[*EvaluationJob.OPEN, EvaluationJob.Status.FAILED])
            )
        )
        .distinct()
    )
    if not references_visible(system.dataset, viewer):
        metrics = metrics.exclude(needs__contains=["references"])
    columns = [ScoreColumn(m.slug, m.name, m.family, m.points) for m in metrics]
    return sorted(columns, key=lambda column: (column.family, column.name.lower()))


def caption_scores_all(*, system: System, viewer, chunk: int = 1000) -> Iterator[CaptionScores]:
    """Every caption of the system with its scores (caption_scores), `chunk` captions a read."""
    ids = list(Caption.objects.listed_to(viewer).filter(system=system).order_by("id").values_list("pk", flat=True))
    for start in range(0, len(ids), chunk):
        yield from caption_scores(caption_ids=ids[start : start + chunk], viewer=viewer)[1]
