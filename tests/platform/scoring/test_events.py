"""Scoring tells the layers above it that a job ended through one signal; the order of its receivers
is part of the behaviour: a submission's status is settled before its dataset's board is rebuilt
(the board reads that status)."""

from scoring.events import job_ended
from scoring.models import EvaluationJob


def test_submissions_settle_before_the_board_is_rebuilt():
    sync_receivers, _ = job_ended._live_receivers(EvaluationJob)
    modules = [receiver.__module__ for receiver in sync_receivers]
    assert "submissions.signals" in modules and "leaderboards.signals" in modules, modules
    assert modules.index("submissions.signals") < modules.index("leaderboards.signals"), modules
