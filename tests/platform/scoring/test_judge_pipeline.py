"""Language-model judges go through the pipeline like any other metric: G-VEval and CLAIR score a
submission against the fake endpoint, the reasoning and distributions land in the score detail,
and a caption the judge gave no number for is stored as a failure with the judge's reply."""

import json

import pytest

from catalog.models import Item
from scoring.models import EvaluationJob, Score
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.fixtures.fake_openai import completion, ok, words
from tests.platform.scoring.inline import run_jobs
from tests.platform.scoring.pictures import attach_images

pytestmark = pytest.mark.django_db(transaction=True)


def test_judges_score_a_submission_and_keep_their_reasoning(judge_server, demo_dataset, captioner, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path / "media"
    attach_images(demo_dataset, 100, tmp_path)

    def answer(body):
        message = body["messages"][0]
        text = message["content"] if isinstance(message["content"], str) else message["content"][0]["text"]
        if "Candidate set:" in text:  # CLAIR
            return ok(completion(words('{"score": 40, "reason": "partly the same"}')))
        if "a caption nobody can rate" in text:
            return ok(completion(words("I cannot rate this caption.")))
        return ok(
            completion(
                words("Reasonable caption. The final score is")
                + [(" $", {}), ("70", {"70": 0.75, "90": 0.25}), ("$.", {})]
            )
        )

    judge_server.default = answer
    items = list(Item.objects.filter(dataset=demo_dataset).order_by("id"))
    entries = [
        {"image_id": item.external_id, "caption": "a caption nobody can rate" if i == 0 else item.references[0]}
        for i, item in enumerate(items)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("Judge test"),
        metrics=["gveval_combined", "clair"],
    )
    submission_plan(submission_id=submission.pk)
    jobs = list(EvaluationJob.objects.filter(system=submission.system).select_related("metric_version__metric"))
    assert {job.metric_version.metric.queue for job in jobs} == {"api"}
    run_jobs(jobs)
    gveval = Score.objects.filter(metric_version__metric__slug="gveval_combined")
    clair = Score.objects.filter(metric_version__metric__slug="clair")
    assert set(clair.values_list("value", flat=True)) == {0.4}
    rated = gveval.exclude(value__isnull=True)
    assert rated.count() == len(items) - 1
    assert {round(v, 6) for v in rated.values_list("value", flat=True)} == {75.0}
    detail = rated.first().detail
    assert detail["reply"].startswith("Reasonable caption.")
    assert detail["distribution"] == {"70": 0.75, "90": 0.25}
    assert detail["prompt_tokens"] == 120
    assert detail["completion_tokens"] == 9
    failed = gveval.get(value__isnull=True)
    assert failed.error.startswith("unparseable reply")
    assert failed.detail["reply"] == "I cannot rate this caption."
    job = EvaluationJob.objects.get(system=submission.system, metric_version__metric__slug="gveval_combined")
    assert (job.status, job.failed) == ("done", 1)
