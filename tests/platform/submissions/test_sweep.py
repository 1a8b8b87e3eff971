"""The periodic sweep (submissions/sweep.py, `manage.py sweep`): recovery, settling, then re-scoring."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from scoring.models import EvaluationJob, MetricVersion
from submissions.models import Submission
from submissions.sweep import submissions_sweep

pytestmark = pytest.mark.django_db


def test_a_submission_whose_end_was_lost_settles_in_the_sweep_that_rescores_it(
    captioner, demo_dataset, scored_submission
):
    submission = scored_submission(captioner, demo_dataset, ["bleu_4"])
    job = EvaluationJob.objects.get(system=submission.system)
    assert job.status == EvaluationJob.Status.DONE
    # Its job ran under an older version of the metric, and its end never reached the submission.
    older = MetricVersion.objects.create(metric=job.metric_version.metric, version="0", config_hash="0" * 16)
    EvaluationJob.objects.filter(pk=job.pk).update(metric_version=older)
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.RUNNING, finished_at=None)

    counts = submissions_sweep()

    assert counts["settled"] == 1  # settled before the re-scoring job opened on its system
    assert counts["rescoring"] == 1
    assert EvaluationJob.objects.open().filter(system=submission.system).count() == 1
    submission.refresh_from_db()
    assert submission.status == Submission.Status.DONE


def test_the_command_runs_the_sweep_once_and_prints_its_tally(captioner, demo_dataset, scored_submission):
    submission = scored_submission(captioner, demo_dataset, ["bleu_4"])
    Submission.objects.filter(pk=submission.pk).update(status=Submission.Status.RUNNING, finished_at=None)
    out = io.StringIO()
    call_command("sweep", stdout=out)
    assert "settled 1" in out.getvalue()
    assert "dispatched 0" in out.getvalue()
    submission.refresh_from_db()
    assert submission.status == Submission.Status.DONE
