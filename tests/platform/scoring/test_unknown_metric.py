"""An unknown metric slug is `UnknownMetric` (a KeyError, so older callers keep working); the
platform catches that alone, so a KeyError from a bug is not reported as a bad slug."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

import capbench_eval.metrics
from capbench_eval.metrics import UnknownMetric, get, slugs
from capbench_eval.metrics.registry import UnknownMetric as RegistryUnknownMetric
from scoring.management.commands import scoring as scoring_command
from scoring.services.metrics import metric_versions_current
from submissions import services as submission_services
from submissions.models import Submission
from tests.platform.scoring.inline import submit_planned


def test_get_raises_unknown_metric_naming_the_known_slugs():
    assert UnknownMetric is RegistryUnknownMetric
    assert "UnknownMetric" in capbench_eval.metrics.__all__
    with pytest.raises(UnknownMetric) as raised:
        get("nope")
    assert isinstance(raised.value, KeyError)
    assert raised.value.args[0] == f"unknown metric 'nope' (known: {', '.join(slugs())})"


@pytest.mark.django_db
def test_metric_versions_current_refuses_unknown_slugs_with_unknown_metric():
    with pytest.raises(UnknownMetric, match="unknown metric\\(s\\): nope"):
        metric_versions_current(["nope", "bleu_4"])


@pytest.mark.django_db
def test_the_scoring_command_reports_an_unknown_metric_but_not_another_key_error(demo_dataset, monkeypatch):
    with pytest.raises(CommandError, match="unknown metric\\(s\\): nope"):
        call_command("scoring", "score-dataset", "demo", "--metric", "nope", stdout=io.StringIO())

    def broken(**kwargs):
        raise KeyError("a bug, not a slug")

    monkeypatch.setattr(scoring_command, "dataset_plan", broken)
    with pytest.raises(KeyError, match="a bug, not a slug") as raised:
        call_command("scoring", "score-dataset", "demo", stdout=io.StringIO())
    assert not isinstance(raised.value, CommandError)


@pytest.mark.django_db
def test_submission_planning_fails_the_submission_only_for_an_unknown_metric(demo_dataset, captioner, monkeypatch):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])

    def broken(slugs=None):
        raise KeyError("a bug, not a slug")

    monkeypatch.setattr(submission_services, "metric_versions_current", broken)
    with pytest.raises(KeyError, match="a bug, not a slug"):
        submission_services.submission_plan(submission_id=submission.pk)
    assert Submission.objects.get(pk=submission.pk).status != Submission.Status.FAILED
