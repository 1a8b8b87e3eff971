"""A submission's progress counts only the work this server does (a metric it does not compute is
listed apart, in no total), and its per-caption scores come a row per caption, the metrics as
columns (submissions.selectors)."""

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from scoring.models import EvaluationJob, Metric
from submissions import selectors

pytestmark = pytest.mark.django_db(transaction=True)


def test_progress_totals_count_only_the_metrics_computed_here(scored_submission, demo_dataset, captioner):
    submission = scored_submission(captioner, demo_dataset, ["test_missing_weights", "rouge_l", "test_words"])
    progress = selectors.submission_progress(submission=submission)
    assert [line["metric"] for line in progress["metrics"]] == ["rouge_l", "test_words"]
    assert (progress["done"], progress["total"], progress["final"]) == (200, 200, True)  # ends at N/N
    assert [line["metric"] for line in progress["unavailable"]] == ["test_missing_weights"]
    assert progress["not_computed_here"] == "Test: weights absent (a program it needs is not installed)"
    assert all(line["batches_ahead"] == 0 for line in progress["metrics"])

    # A job planned before planning skipped such metrics, still queued: not work to wait for either.
    EvaluationJob.objects.filter(metric_version__metric__slug="test_missing_weights").update(status="queued")
    progress = selectors.submission_progress(submission=submission)
    assert progress["total"] == 200
    assert [line["metric"] for line in progress["unavailable"]] == ["test_missing_weights"]
    Metric.objects.filter(slug="test_missing_weights").update(available=True)  # the weights arrived
    progress = selectors.submission_progress(submission=submission)
    assert progress["total"] == 300
    assert progress["unavailable"] == []


def test_the_per_caption_table_has_a_row_per_caption_and_a_column_per_metric(
    scored_submission, demo_dataset, captioner, monkeypatch
):
    submission = scored_submission(captioner, demo_dataset, ["test_missing_weights", "rouge_l", "test_words"])
    table = selectors.score_page(submission=submission, viewer=None, metric=None, number=1)
    assert [column.slug for column in table.columns] == ["rouge_l", "test_words"]  # no empty unavailable column
    assert len(table.rows) == len({row.caption_id for row in table.rows}) == submission.caption_count == 100
    assert all(len(row.cells) == 2 and all(cell is not None for cell in row.cells) for row in table.rows)
    words = table.rows[0].cells[1]
    assert words.shown.points == pytest.approx(100 * words.value)  # in points, as the board shows it
    only = selectors.score_page(submission=submission, viewer=None, metric="rouge_l", number=1)
    assert [column.slug for column in only.columns] == ["rouge_l"]
    assert len(only.rows) == 100
    monkeypatch.setattr(selectors, "SCORE_ROWS", 30)
    pages = [selectors.score_page(submission=submission, viewer=None, metric=None, number=n) for n in (1, 2, 3, 4)]
    seen = [row.caption_id for page in pages for row in page.rows]
    assert [len(page.rows) for page in pages] == [30, 30, 30, 10]
    assert len(set(seen)) == 100
    nonsense = selectors.score_page(submission=submission, viewer=None, metric="no-such", number="x")
    assert nonsense.columns == []
    assert len(nonsense.rows) == 30
