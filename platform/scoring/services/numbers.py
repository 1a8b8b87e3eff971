"""A system's number under a metric version, its 95% interval and the images it is over: computed
here from the stored per-caption scores, the one way every surface reads (docs/metrics.md, "A
system's number"): the whole board's (stored as SystemScore when a job ends), a subset board's, the
compare page's paired differences and the system-level correlations.

How the number is formed is the metric's (`capbench_eval.metrics.base.Metric.aggregation`: the mean
of the per-caption scores, or the corpus statistic of their summed statistics); scores no registered
metric computed (a researcher's upload) are averaged."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from functools import partial
from typing import cast

import numpy as np
from django.db import transaction
from django.db.models import QuerySet

from capbench_eval import metrics as registry
from capbench_eval.metaeval.system_value import (
    MEAN_OF_SCORES,
    Aggregation,
    ImageTotals,
    SystemNumber,
    image_totals,
    system_number,
)
from capbench_eval.metrics.base import CORPUS
from scoring.events import numbers_changed
from scoring.models import NUMBER_DEFINITION, MetricVersion, Score, SystemScore

log = logging.getLogger(__name__)


def metric_aggregation(slug: str) -> Aggregation:
    """How the metric forms a system's number: the registered metric's own way, else the mean."""
    try:
        return cast(Aggregation, registry.get(slug))  # (its aggregation a ClassVar: the same attribute)
    except registry.UnknownMetric:
        return MEAN_OF_SCORES


def system_totals(
    *, system_id: int, version: MetricVersion, items: Iterable[int] | None = None
) -> tuple[ImageTotals | None, int]:
    """The system's scored captions under `version` summed per image (only `items`, when given),
    and how many of its captions the metric failed on. None instead of the totals when a corpus
    metric lacks a caption's statistics (scores stored before the metric kept them)."""
    found = Score.objects.filter(metric_version=version, caption__system_id=system_id)
    if items is not None:
        found = found.filter(caption__item_id__in=list(items))
    summed = totals_of(found, {(system_id, version.pk): version.metric.slug})
    return summed.get((system_id, version.pk)), summed.failed.get((system_id, version.pk), 0)


class SummedScores(dict):
    """(system id, metric version id) -> ImageTotals (None where a corpus metric lacked a caption's
    statistics), with `failed`: the captions the metric failed on, per the same key."""

    def __init__(self) -> None:
        super().__init__()
        self.failed: dict[tuple[int, int], int] = {}


def totals_of(scores: QuerySet[Score], wanted: dict[tuple[int, int], str]) -> SummedScores:
    """The `scores` of each wanted (system id, metric version id) (its metric's slug the value)
    summed per image, read in one pass: what a subset board or a comparison reads for many systems
    and metrics at once."""
    corpus = {key for key, slug in wanted.items() if metric_aggregation(slug).aggregation == CORPUS}
    columns = ["caption__system_id", "metric_version_id", "value", "caption__item_id", "statistics"]
    if not corpus:
        columns.pop()  # (no metric sums statistics: not read)
    rows: dict[tuple[int, int], tuple[list, list, list]] = {key: ([], [], []) for key in wanted}
    out = SummedScores()
    for row in scores.order_by("caption_id").values_list(*columns).iterator(chunk_size=5000):
        key = (row[0], row[1])
        if key not in rows:
            continue
        if row[2] is None or not math.isfinite(row[2]):
            out.failed[key] = out.failed.get(key, 0) + 1
            continue
        values, images, statistics = rows[key]
        values.append(row[2])
        images.append(row[3])
        if key in corpus:
            statistics.append(row[4])
    for key, (values, images, statistics) in rows.items():
        metric = metric_aggregation(wanted[key])
        try:
            out[key] = image_totals(metric, values, statistics if key in corpus else None, images)
        except ValueError:
            out[key] = None
    return out


def _number_fields(*, system_id: int, version: MetricVersion) -> dict | None:
    """What a SystemScore holds for the system under `version`, computed from its stored scores;
    None when it has no score there."""
    totals, failed = system_totals(system_id=system_id, version=version)
    if totals is not None and not totals.captions and not failed:
        return None
    number = SystemNumber(None, None, None, 0, 0)
    if totals is not None:
        number = system_number(metric_aggregation(version.metric.slug), totals)
    return {
        "value": number.value,
        "low": number.low,
        "high": number.high,
        "count": number.captions,
        "images": number.images,
        "failed": failed,
        "definition": NUMBER_DEFINITION,
    }


def system_number_store(*, system_id: int, version: MetricVersion) -> SystemScore | None:
    """Compute and keep the system's number under `version` (None when it has no score there)."""
    fields = _number_fields(system_id=system_id, version=version)
    if fields is None:
        return None
    return SystemScore.objects.update_or_create(system_id=system_id, metric_version=version, defaults=fields)[0]


def system_numbers_refresh(*, limit: int = 200) -> set[int]:
    """Compute again up to `limit` system numbers kept under an older definition of a system's
    number (the sweep's work after an upgrade), in random order so that one that fails cannot hold
    up the rest; a number whose scores are gone is dropped. Each keeps its `computed_at` (when its
    job scored it). Returns the datasets whose numbers changed, whose boards are then rebuilt
    (scoring.events.numbers_changed)."""
    stale = (
        SystemScore.objects.filter(definition__lt=NUMBER_DEFINITION)
        .select_related("metric_version__metric", "system")
        .order_by("?")[:limit]
    )
    datasets: set[int] = set()
    for found in stale:
        try:
            fields = _number_fields(system_id=found.system_id, version=found.metric_version)
            if fields is None:
                SystemScore.objects.filter(pk=found.pk).delete()
            else:
                SystemScore.objects.filter(pk=found.pk).update(**fields)  # (an update: computed_at stays)
        except Exception:  # one number's failure is logged and leaves the others to be done
            log.exception("could not compute system number %s again", found.pk)
            continue
        datasets.add(found.system.dataset_id)
    for dataset_id in sorted(datasets):
        transaction.on_commit(partial(numbers_changed.send, SystemScore, dataset_id=dataset_id))
    return datasets


def mean_interval(values: np.ndarray, items: list) -> tuple[float | None, float | None]:
    """95% interval of the mean of `values` (human ratings), their `items` resampled, as a mean
    metric's number is resampled."""
    number = system_number(MEAN_OF_SCORES, image_totals(MEAN_OF_SCORES, values, None, items))
    return number.low, number.high
