"""The library gives the platform's numbers: a submission on the demo dataset is scored end to end as
the platform scores it (planned, run batch by batch, finalised), then `capbench_eval.library.score`
runs on the same captions with the references the platform gave the metric and each caption's image.
Its per-caption scores, its system values and 95% intervals (the bootstrap draws the same images)
and its signature equal what the platform stored (issue 41, "Signatures")."""

from __future__ import annotations

import pytest

from capbench_eval.library import score
from catalog.models import Caption
from scoring.models import EvaluationJob, Score, SystemScore
from scoring.services import contexts
from scoring.services.rows import caption_rows
from scoring.signatures import version_signature
from tests.platform.factories import submit
from tests.platform.scoring.inline import run_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]  # METEOR's JVM starts for it

NGRAM = ["bleu_1", "bleu_2", "bleu_3", "bleu_4", "meteor", "rouge_l", "cider_d"]
SAME = 1e-12


@pytest.fixture(autouse=True)
def _fresh_context_memory():
    """Each test has a fresh database; the worker-process memory of corpus contexts must match it."""
    contexts._MEMORY.clear()


def _mixed(item) -> str:
    """A caption that shares some of an image's words, not all in order: the first four of its
    first reference, then the last four of its second."""
    return " ".join(item.references[0].split()[:4] + item.references[1].split()[-4:])


@pytest.fixture
def compared(demo_dataset, captioner, settings):
    """The platform's stored numbers and the library's for the same captions, keyed alike."""
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 40, "gpu": 40, "api": 40}  # several batches a job, as at scale
    # In random order: the captions' ids do not follow their images', so only the images passed
    # make the library's bootstrap draw what the platform's drew.
    submission = submit(captioner, demo_dataset, "Mixed", caption=_mixed, metrics=NGRAM, plan=True, shuffled=True)
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    captions = list(Caption.objects.filter(system=submission.system).order_by("id").values_list("pk", "item_id"))
    given = {str(job_row.caption_id): job_row.row for job_row in caption_rows([pk for pk, _ in captions], media=False)}
    images = {str(pk): item_id for pk, item_id in captions}
    found: dict[str, dict] = {"stored": {}, "library": {}}
    for slug in NGRAM:
        result = score(
            slug,
            {key: row.candidate for key, row in given.items()},
            {key: list(row.references) for key, row in given.items()},
            images=images,
        )
        stored = SystemScore.objects.select_related("metric_version__metric").get(
            system=submission.system, metric_version__metric__slug=slug
        )
        per_caption = dict(
            Score.objects.filter(metric_version=stored.metric_version, caption__system=submission.system).values_list(
                "caption_id", "value"
            )
        )
        found["stored"][slug] = {
            "scores": {(slug, key): per_caption[int(key)] for key in result.ids},
            "numbers": {(slug, "value"): stored.value, (slug, "low"): stored.low, (slug, "high"): stored.high},
            "images": stored.images,
            "signature": version_signature(stored.metric_version),
        }
        found["library"][slug] = {
            "scores": dict(zip([(slug, key) for key in result.ids], result.scores, strict=True)),
            "numbers": {(slug, "value"): result.value, (slug, "low"): result.low, (slug, "high"): result.high},
            "images": result.images,
            "signature": result.signature,
        }
    return found


def _merged(found: dict, part: str) -> dict:
    return {key: value for by_metric in found.values() for key, value in by_metric[part].items()}


def _each(found: dict, part: str) -> dict:
    return {slug: by_metric[part] for slug, by_metric in found.items()}


def test_the_library_gives_the_platforms_scores_numbers_and_signatures(compared):
    """One scoring of the submission (a JVM, seven metrics), every comparison on it."""
    stored, library = compared["stored"], compared["library"]
    assert _merged(library, "scores") == pytest.approx(_merged(stored, "scores"), abs=SAME, rel=0)
    assert _merged(library, "numbers") == pytest.approx(_merged(stored, "numbers"), abs=SAME, rel=0)
    assert None not in _merged(stored, "numbers").values()  # (every metric has a number and an interval here)
    assert _each(library, "images") == _each(stored, "images")
    assert _each(library, "signature") == _each(stored, "signature")
