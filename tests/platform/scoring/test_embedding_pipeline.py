"""Embedding metrics go through the pipeline like any other: images attached to the dataset reach
CLIP-S and Polos through the batch rows, captions without an attached image fail with the reason,
and the stored numbers (and details) equal the metric called directly."""

import json
from pathlib import Path

import pytest

from capbench_eval.metrics import CaptionRow
from capbench_eval.metrics.embedding.bertscore import BertScore
from capbench_eval.metrics.embedding.clip_score import ClipScore, RefClipScore
from capbench_eval.metrics.embedding.polos import Polos
from catalog.models import Caption, Item
from scoring.models import EvaluationJob, Score
from submissions.services import MethodInfo, submission_create, submission_plan
from tests.platform.scoring.inline import run_jobs
from tests.platform.scoring.pictures import attach_images

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_embedding_metrics_score_a_submission_through_the_engine(
    model_store, roberta_store, polos_store, demo_dataset, captioner, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    attach_images(demo_dataset, 90, tmp_path)
    entries = [
        {"image_id": item.external_id, "caption": item.references[0]}
        for item in Item.objects.filter(dataset=demo_dataset)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=demo_dataset,
        file_name="r.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo("CLIP test"),
        metrics=["clip_s", "ref_clip_s", "polos", "bertscore"],
    )
    submission_plan(submission_id=submission.pk)
    jobs = list(EvaluationJob.objects.filter(system=submission.system).select_related("metric_version__metric"))
    assert {job.metric_version.metric.queue for job in jobs} == {"gpu"}
    run_jobs(jobs)
    for job in EvaluationJob.objects.filter(system=submission.system).select_related("metric_version__metric"):
        needs_image = job.metric_version.metric.slug != "bertscore"
        assert (job.status, job.done, job.failed) == ("done", 100, 10 if needs_image else 0)
    captions = list(
        Caption.objects.filter(system=submission.system, item__media__stored_path__gt="")
        .select_related("item__media")
        .order_by("id")
    )
    rows = [
        CaptionRow(
            str(c.pk), c.text, tuple(c.item.references), str(Path(settings.MEDIA_ROOT) / c.item.media.stored_path)
        )
        for c in captions
    ]
    for metric in (ClipScore(), RefClipScore(), Polos(), BertScore()):
        stored = dict(
            Score.objects.filter(metric_version__metric__slug=metric.slug, value__isnull=False).values_list(
                "caption_id", "value"
            )
        )
        assert [stored[c.pk] for c in captions] == pytest.approx(metric.score(rows).scores, abs=1e-5)
    missing = Score.objects.filter(metric_version__metric__slug="clip_s", value__isnull=True)
    assert missing.count() == 10
    assert set(missing.values_list("error", flat=True)) == {"the image or video file is not attached to this dataset"}
    detail = Score.objects.filter(metric_version__metric__slug="ref_clip_s", value__isnull=False).first().detail
    assert set(detail) == {"image_score", "reference_term"}
    polos = Score.objects.filter(metric_version__metric__slug="polos", value__isnull=False).first()
    assert polos.detail["per_reference"][polos.detail["best_reference"]] == pytest.approx(polos.value)
