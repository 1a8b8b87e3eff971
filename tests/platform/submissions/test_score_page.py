"""A submission's per-caption scores, a page of captions at a time (submissions.selectors.score_page):
one row per caption with each metric a column, in points, every caption once across the pages, a
metric's column alone when asked, and the same statements for the first page and the last."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from scoring.models import Score
from submissions import selectors

pytestmark = pytest.mark.django_db(transaction=True)


def scores_table(body: str) -> str:
    return body[body.index('id="scores"') : body.index("</table>", body.index('id="scores"'))]


def test_pages_of_captions_hold_every_caption_once_with_its_metrics_as_columns(
    scored_submission, demo_dataset, captioner, client, monkeypatch
):
    submission = scored_submission(
        captioner, demo_dataset, ["bleu_4", "rouge_l", "test_missing_weights"], reference=1, method="Second reference"
    )
    monkeypatch.setattr(selectors, "SCORE_ROWS", 40)
    first = selectors.score_page(submission=submission, viewer=None, metric=None, number=1)
    pages, seen, counts = first.page.paginator.num_pages, [], []
    for number in range(1, pages + 1):
        with CaptureQueriesContext(connection) as queries:
            table = selectors.score_page(submission=submission, viewer=None, metric=None, number=number)
        counts.append(len(queries))
        seen += [row.caption_id for row in table.rows]
    assert pages == 3
    assert len(seen) == len(set(seen)) == submission.caption_count
    assert len(set(counts)) == 1

    body = client.get(f"/submissions/{submission.pk}/?page=2").content.decode()
    table = scores_table(body)
    assert f"Page 2 of {pages}" in body
    head = re.findall(r'<th scope="col" class="num" data-metric="([\w-]+)">([^<]+)</th>', table)
    assert head == [("bleu_4", "BLEU-4"), ("rouge_l", "ROUGE-L")]  # named as everywhere; no column without scores
    rows = re.findall(r"<tr><td>.*?</tr>", table, re.S)
    assert len(rows) == 40
    assert all(row.count('<td class="num">') == 2 for row in rows)
    second = selectors.score_page(submission=submission, viewer=None, metric=None, number=2).rows[0]
    rouge = Score.objects.get(caption_id=second.caption_id, metric_version__metric__slug="rouge_l")
    assert f'<td class="num">{100 * rouge.value:.1f}</td>' in rows[0]  # points, as the board shows them
    body = client.get(f"/submissions/{submission.pk}/?metric=bleu_4").content.decode()
    head = re.findall(r'data-metric="([\w-]+)"', scores_table(body))
    assert "Page 1 of 3" in body
    assert head == ["bleu_4"]
