"""Reads of scores for pages and the API."""

from __future__ import annotations

from typing import NamedTuple

from catalog.models import Dataset
from scoring.models import EvaluationJob, SystemScore


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
