"""Running jobs in the test process, the way a worker's tasks do (planning is the caller's); the
scoring tests' submission, planned."""

import functools

from scoring.models import JobBatch
from scoring.services.batches import batch_run
from scoring.services.finalize import job_finalize
from tests.platform.factories import submit


def run_jobs(jobs) -> None:
    """What the workers do, in this process: every batch, then the job's finalisation."""
    for job in jobs:
        for batch_id in JobBatch.objects.filter(job=job).order_by("index").values_list("pk", flat=True):
            outcome = batch_run(batch_id=batch_id, worker="test@local")
            if outcome.job_complete:
                job_finalize(job_id=job.pk)


def second_reference(item) -> str:
    return item.references[1]


# Each image's second reference, in random order, private, planned (its jobs made, not run):
# `submit_planned(owner, dataset, metrics=[...])`, with `name=` or `caption=` where a test needs its own.
submit_planned = functools.partial(
    submit, name="Second reference", caption=second_reference, public=False, shuffled=True, plan=True
)
