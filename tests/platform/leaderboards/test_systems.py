"""A system's page (leaderboards.systems): its numbers first, and the metrics this server does not
compute named once, in one line that says why, never as rows of the table."""

import json
import re

import pytest

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from catalog.models import Item
from scoring.models import EvaluationJob, Metric
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.inline import run_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_system_page_names_the_metrics_not_computed_here_once_after_its_numbers(client, demo_dataset, captioner):
    entries = [
        {"image_id": item.external_id, "caption": item.references[0]}
        for item in Item.objects.filter(dataset=demo_dataset)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="results.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Mine"),
        metrics=["test_missing_weights", "rouge_l", "test_words"],
        is_public=True,
    )
    submission_plan(submission_id=submission.pk)
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    page = client.get(f"/datasets/{demo_dataset.slug}/systems/{submission.system.slug}/").content.decode()
    table = page[page.index('id="system-numbers"') : page.index("</table>", page.index('id="system-numbers"'))]
    rows = re.findall(r'<tr data-metric="([\w-]+)">(.*?)</tr>', table, re.S)
    assert [slug for slug, row in rows if 'colspan="3"' not in row][:2] == ["rouge_l", "test_words"]  # numbers first
    assert not any("not available on this server" in row for _, row in rows)  # no row per unavailable metric
    line = re.search(r'<p id="system-unavailable"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert page.count('id="system-unavailable"') == 1
    assert page.index("</table>") < page.index('id="system-unavailable"')
    assert "Test: weights absent" in line
    assert "(a program it needs is not installed)" in line
    unavailable = Metric.objects.filter(is_registered=True, available=False).exclude(slug="test_missing_weights")
    for metric in unavailable:  # every other metric this machine lacks: in the line, not the table
        assert metric.name in line
        assert f'data-metric="{metric.slug}"' not in table
