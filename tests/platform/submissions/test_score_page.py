"""A submission's per-caption scores, a page of captions at a time (submissions.selectors.score_page):
every score once across the pages, a metric's alone when asked, and the same statements for the
first page and the last."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from submissions.selectors import score_page
from tests.platform.scoring.inline import run_jobs
from tests.platform.scoring.test_pipeline import submit

pytestmark = pytest.mark.django_db(transaction=True)


def test_pages_of_captions_hold_every_score_once_and_cost_the_same(demo_dataset, captioner, client):
    submission = submit(captioner, demo_dataset, ["bleu_4", "rouge_l"])
    run_jobs(list(submission.system.evaluation_jobs.all()))
    submission.is_public = True
    submission.save(update_fields=["is_public"])
    first, _ = score_page(submission=submission, viewer=None, metric=None, number=1)
    pages, seen, counts = first.paginator.num_pages, [], []
    for number in range(1, pages + 1):
        with CaptureQueriesContext(connection) as queries:
            page, scores = score_page(submission=submission, viewer=None, metric=None, number=number)
        counts.append(len(queries))
        seen += [(score.caption_id, score.metric_version.metric.slug) for score in scores]
        assert len(page.object_list) == 50  # 100 rows over the 2 metrics
    assert len(seen) == len(set(seen)) == 2 * submission.caption_count
    assert len(set(counts)) == 1
    _, only = score_page(submission=submission, viewer=None, metric="rouge_l", number=1)
    assert {score.metric_version.metric.slug for score in only} == {"rouge_l"} and len(only) == 100

    def scores_table(body: str) -> str:
        return body[body.index('id="scores"') : body.index("</table>", body.index('id="scores"'))]

    body = client.get(f"/submissions/{submission.pk}/?page=2").content.decode()
    assert f"Page 2 of {pages}" in body
    assert "<td>ROUGE-L</td>" in scores_table(body) and "<td>BLEU-4</td>" in scores_table(body)  # named as everywhere
    body = client.get(f"/submissions/{submission.pk}/?metric=bleu_4").content.decode()
    assert "Page 1 of 1" in body
    assert "<td>ROUGE-L</td>" not in scores_table(body) and "<td>BLEU-4</td>" in scores_table(body)
