"""Scoring's signals are notices whose receivers run in any order: `job_ended`'s two (submissions
settle the submission's status, leaderboards rebuild the dataset's board) do not depend on each
other, because the board reads none of what settling writes."""

import pytest

from leaderboards.snapshots import board_build
from submissions.models import Submission

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_board_reads_nothing_that_settling_a_submission_writes(scored_submission, demo_dataset, captioner):
    submission = scored_submission(captioner, demo_dataset, ["rouge_l"])
    assert Submission.objects.get(pk=submission.pk).status == "done"
    settled = board_build(demo_dataset)
    [row] = [row for row in settled["rows"] if row["system"]["id"] == submission.system_id]
    assert row["cells"]["rouge_l"]["state"] == "value"
    # As leaderboards' receiver would find it if it ran before submissions' receiver.
    Submission.objects.filter(pk=submission.pk).update(status="running", error="", finished_at=None)
    assert board_build(demo_dataset) == settled
