"""Reads of scores for pages and the API."""
from __future__ import annotations

from django.db.models import QuerySet

from catalog.models import Dataset
from scoring.models import EvaluationJob, SystemScore


def _finished(dataset: Dataset) -> set[tuple[int | None, int]]:
    return set(EvaluationJob.objects.filter(dataset=dataset, status=EvaluationJob.Status.DONE)
               .values_list("system_id", "metric_version_id"))


def system_values_shown(*, dataset: Dataset) -> dict[tuple[int, str], tuple[float | None, float | None, float | None]]:
    """Per (system id, metric slug) (value, low, high) of the newest metric version whose job is done:
    while a new version is being computed, the previous one stays on the board (no empty cells in
    between). A dataset job (no system) covers every system of the dataset."""
    finished = _finished(dataset)
    shown: dict[tuple[int, str], tuple] = {}
    rows = (SystemScore.objects.filter(system__dataset=dataset).order_by("metric_version__created_at", "id")
            .values_list("system_id", "metric_version_id", "metric_version__metric__slug", "value", "low", "high"))
    for system_id, version_id, slug, value, low, high in rows:
        if (system_id, version_id) in finished or (None, version_id) in finished:
            shown[(system_id, slug)] = (value, low, high)  # later versions overwrite
    return shown


def system_scores_shown(*, dataset: Dataset) -> list[SystemScore]:
    """The SystemScore rows behind `system_values_shown`."""
    finished = _finished(dataset)
    shown: dict[tuple[int, int], SystemScore] = {}
    candidates = (SystemScore.objects.filter(system__dataset=dataset)
                  .select_related("metric_version__metric", "system").order_by("metric_version__created_at", "id"))
    for score in candidates:
        if (score.system_id, score.metric_version_id) in finished or (None, score.metric_version_id) in finished:
            shown[(score.system_id, score.metric_version.metric_id)] = score
    return list(shown.values())


def jobs_of_submission(*, submission_id: int) -> QuerySet[EvaluationJob]:
    return (EvaluationJob.objects.filter(submission_id=submission_id)
            .select_related("metric_version__metric").order_by("metric_version__metric__slug"))
