"""How many statements one batch costs the database: pinned, so that a change that adds round trips
to every batch of every job shows here (a 5,000-caption submission with seven metrics is 35 batches)."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import Item
from scoring.models import EvaluationJob, JobBatch
from scoring.services import contexts
from scoring.services.batches import batch_run
from submissions.services import MethodInfo, submission_create, submission_plan

pytestmark = pytest.mark.django_db(transaction=True)

# Claim (3 and the transaction), the rows, the earlier scores, and the record (the job's lock, the
# scores' write, the batch, the job's totals, the job, and the transaction).
STEADY = 17
# The first batch of a job also marks the job and its submission running.
FIRST = STEADY + 2


def statements(queries: CaptureQueriesContext) -> str:
    return "\n".join(query["sql"][:160] for query in queries.captured_queries)


@pytest.mark.parametrize("slug", ["rouge_l", "cider_d"])
def test_one_batch_takes_a_fixed_number_of_statements(slug, demo_dataset, captioner, settings):
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 30, "gpu": 30, "api": 30}
    contexts._MEMORY.clear()
    entries = [{"image_id": item.external_id, "caption": item.references[1]} for item in Item.objects.all()]
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="results.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Second reference"),
        metrics=[slug],
    )
    submission_plan(submission_id=submission.pk)
    job = EvaluationJob.objects.get(system=submission.system)
    first, second, *_ = JobBatch.objects.filter(job=job).order_by("index").values_list("pk", flat=True)
    with CaptureQueriesContext(connection) as queries:  # CIDEr-D's context built here, and kept by this process
        assert batch_run(batch_id=first, worker="test@local").state == "done"
    if slug == "rouge_l":
        assert len(queries) <= FIRST, statements(queries)
    with CaptureQueriesContext(connection) as queries:
        assert batch_run(batch_id=second, worker="test@local").state == "done"
    assert len(queries) <= STEADY, statements(queries)
