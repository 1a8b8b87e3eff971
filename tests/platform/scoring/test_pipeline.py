"""The scoring engine in-process: planning, batches, reuse of identical work, corpus contexts,
unavailable and failing metrics, versions, and the reaper. (The real worker is in test_worker.py.)"""

from datetime import timedelta

import pytest
from django.utils import timezone

import tests.platform.scoring.plugins  # noqa: F401  (registers the test metrics here)
from capbench_eval.metrics import CaptionRow, get
from catalog.models import Caption, Item
from catalog.uploads.services import upload_withdraw
from plumbing import heartbeat
from scoring.models import CorpusContext, EvaluationJob, JobBatch, Metric, MetricVersion, Score, SystemScore
from scoring.selectors import system_values_shown
from scoring.services import contexts
from scoring.services.batches import batch_run
from scoring.services.metrics import metrics_sync
from scoring.services.planning import dataset_plan, versions_rescore
from scoring.services.reaper import batches_recover_worker, jobs_reap
from submissions.models import Submission
from submissions.services import SUBMISSIONS, submission_plan
from tests.platform.scoring.inline import run_jobs, submit_planned

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_context_memory():
    """Each test has a fresh database; the worker-process memory of contexts must match it."""
    contexts._MEMORY.clear()


def scores_of(system, slug) -> dict[int, float]:
    return dict(
        Score.objects.filter(caption__system=system, metric_version__metric__slug=slug).values_list(
            "caption_id", "value"
        )
    )


def test_sync_mirrors_the_registry_and_a_new_configuration_is_a_new_version(monkeypatch):
    metrics_sync()
    cider = Metric.objects.get(slug="cider_d")
    assert (
        cider.corpus_dependent
        and cider.queue == "cpu"
        and cider.current_version.version == get("cider_d").version == "2"
    )
    assert not Metric.objects.get(slug="test_missing_weights").available
    monkeypatch.setattr(type(get("cider_d")), "config", lambda self: {"n": 4, "sigma": 7.0})
    created = metrics_sync()
    assert [str(v.metric) for v in created] == ["cider_d"]
    cider.refresh_from_db()
    assert MetricVersion.objects.filter(metric=cider).count() == 2
    assert cider.current_version == created[0]


@pytest.mark.slow  # METEOR's JVM starts for it: ten seconds
def test_a_submission_is_scored_batch_by_batch_like_one_call(demo_dataset, captioner, settings, monkeypatch):
    settings.CAPBENCH_BATCH_SIZE = {"cpu": 30, "gpu": 30, "api": 30}
    monkeypatch.setattr(type(get("meteor")), "batch_size", None)  # METEOR's corpus number across batches too
    submission = submit_planned(captioner, demo_dataset, metrics=["bleu_4", "cider_d", "meteor", "rouge_l"])
    jobs = list(EvaluationJob.objects.filter(system=submission.system))
    assert {job.batch_count for job in jobs} == {4}
    assert {job.total for job in jobs} == {100}
    run_jobs(jobs)
    assert set(EvaluationJob.objects.filter(system=submission.system).values_list("status", flat=True)) == {"done"}
    submission.refresh_from_db()
    assert submission.status == "done"
    assert submission.finished_at is not None
    captions = list(Caption.objects.filter(system=submission.system).select_related("item").order_by("id"))
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    for slug in ("bleu_4", "cider_d", "meteor", "rouge_l"):
        whole = get(slug).score(rows)  # one call on the whole submission, as pycocoevalcap would
        stored = scores_of(submission.system, slug)
        assert [stored[c.pk] for c in captions] == pytest.approx(whole.scores, abs=1e-9), slug
        system_score = SystemScore.objects.get(system=submission.system, metric_version__metric__slug=slug)
        assert system_score.value == pytest.approx(whole.corpus, abs=1e-9), slug
        assert system_score.count == 100
        assert system_score.failed == 0
    assert CorpusContext.objects.count() == 1  # CIDEr-D's document frequencies, built once


def test_identical_work_is_reused_and_the_corpus_context_is_shared(demo_dataset, captioner, settings):
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 10
    first = submit_planned(captioner, demo_dataset, metrics=["cider_d", "rouge_l"])
    run_jobs(EvaluationJob.objects.filter(system=first.system))
    again = submit_planned(captioner, demo_dataset, metrics=["cider_d", "rouge_l"], name="The same file again")
    jobs = list(EvaluationJob.objects.filter(system=again.system))
    run_jobs(jobs)
    assert [EvaluationJob.objects.get(pk=job.pk).reused for job in jobs] == [100, 100]
    assert CorpusContext.objects.count() == 1  # same items' references: the same context
    assert len({job.context_key for job in EvaluationJob.objects.filter(metric_version__metric__slug="cider_d")}) == 1
    for slug in ("cider_d", "rouge_l"):
        assert sorted(scores_of(first.system, slug).values()) == sorted(scores_of(again.system, slug).values())


def test_a_batch_delivered_twice_writes_the_same_rows(demo_dataset, captioner):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    batch = JobBatch.objects.get(job__system=submission.system)
    assert batch_run(batch_id=batch.pk).state == "done"
    before = list(Score.objects.order_by("caption_id").values_list("caption_id", "value"))
    assert batch_run(batch_id=batch.pk).state == "skipped"
    JobBatch.objects.filter(pk=batch.pk).update(status="queued")  # redelivered after a lost ack
    EvaluationJob.objects.filter(pk=batch.job_id).update(status="running")
    assert batch_run(batch_id=batch.pk).state == "done"
    assert list(Score.objects.order_by("caption_id").values_list("caption_id", "value")) == before
    assert EvaluationJob.objects.get(pk=batch.job_id).done == 100


def test_an_unavailable_metric_ends_its_job_with_the_reason_and_blocks_nothing(demo_dataset, captioner):
    submission = submit_planned(captioner, demo_dataset, metrics=["test_missing_weights", "rouge_l"])
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    missing = EvaluationJob.objects.get(system=submission.system, metric_version__metric__slug="test_missing_weights")
    assert missing.status == "unavailable"
    assert missing.error == "unavailable: checkpoint test-model.pt is not in the model store"
    assert not Score.objects.filter(metric_version=missing.metric_version).exists()  # no made-up numbers
    assert EvaluationJob.objects.get(system=submission.system, metric_version__metric__slug="rouge_l").status == "done"
    assert Submission.objects.get(pk=submission.pk).status == "done"


def test_captions_a_metric_cannot_score_are_recorded_as_failures_not_numbers(demo_dataset, captioner):
    submission = submit_planned(
        captioner,
        demo_dataset,
        metrics=["test_questions"],
        caption=lambda item: "what is this ??" if item.pk % 4 == 0 else "a dog",
    )
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    job = EvaluationJob.objects.get(system=submission.system)
    expected_failures = sum(
        pk % 4 == 0 for pk in Item.objects.filter(dataset=demo_dataset).values_list("pk", flat=True)
    )
    assert job.status == "done"
    assert job.failed == expected_failures > 0
    failures = Score.objects.filter(metric_version=job.metric_version, value__isnull=True)
    assert failures.count() == expected_failures
    assert set(failures.values_list("error", flat=True)) == {"could not read a number in the answer"}
    assert failures.first().detail["reply"] == "no number\ufffd here"  # PostgreSQL cannot store NUL
    summary = SystemScore.objects.get(system=submission.system)
    assert summary.failed == expected_failures
    assert summary.count == 100 - expected_failures


def test_dataset_scoring_weights_cider_by_judgment_rows_and_computes_correlations(demo_dataset):
    jobs = dataset_plan(dataset=demo_dataset, slugs=["cider_d", "bleu_4"])
    run_jobs(jobs)
    captions = list(
        Caption.objects.filter(item__dataset=demo_dataset)
        .select_related("item")
        .prefetch_related("judgments")
        .order_by("id")
    )
    # The published protocol's corpus: one row per judgment (metrics.md §4).
    rows = [CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions for _ in c.judgments.all()]
    whole = dict(zip([row.id for row in rows], get("cider_d").score(rows).scores, strict=True))
    stored = dict(Score.objects.filter(metric_version__metric__slug="cider_d").values_list("caption_id", "value"))
    assert {pk: stored[pk] for pk in map(int, whole)} == pytest.approx({int(k): v for k, v in whole.items()}, abs=1e-9)
    results = {
        (r.protocol, r.statistic): r
        for r in EvaluationJob.objects.get(pk=jobs[0].pk).metric_version.correlations.filter(dataset=demo_dataset)
    }
    assert set(results) >= {("flickr8k-expert/paper@1", "tau_c"), ("flickr8k-expert/canonical@1", "pearson")}
    tau_c = results[("flickr8k-expert/paper@1", "tau_c")]
    assert tau_c.low < tau_c.value < tau_c.high
    assert tau_c.n == sum(len(c.judgments.all()) for c in captions)
    assert 0 <= tau_c.tie_rate < 1


def test_a_new_metric_version_rescores_and_the_old_numbers_stay_shown_until_done(demo_dataset, captioner, monkeypatch):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    old_version = MetricVersion.objects.get(metric__slug="rouge_l")
    monkeypatch.setattr(type(get("rouge_l")), "config", lambda self: {"beta": 1.2, "tokenizer": "changed"})
    metrics_sync()
    planned = versions_rescore()
    assert [(job.system_id, job.metric_version.metric.slug) for job in planned] == [(submission.system_id, "rouge_l")]
    assert versions_rescore() == []  # planned once
    new_version = planned[0].metric_version
    assert new_version != old_version
    shown = system_values_shown(dataset=demo_dataset)
    assert [score.metric_version_id for score in shown.values()] == [old_version.pk]  # no empty cell meanwhile
    assert Score.objects.filter(metric_version=old_version).count() == 100
    run_jobs(planned)
    shown = system_values_shown(dataset=demo_dataset)
    assert [score.metric_version_id for score in shown.values()] == [new_version.pk]
    assert Score.objects.filter(metric_version=old_version).count() == 100  # kept for the record


def test_a_withdrawn_submission_is_not_rescored_and_its_open_jobs_are_cancelled(
    demo_dataset, captioner, monkeypatch, settings
):
    """Jobs know only systems: withdrawing cancels the system's open jobs (jobs_cancel(system_id=)),
    and the re-scoring leaves a withdrawn submission's system alone (planning._rescorable)."""
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 10
    kept = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    scored = submit_planned(captioner, demo_dataset, metrics=["rouge_l"], name="Withdrawn once scored")
    run_jobs(EvaluationJob.objects.filter(system__in=[kept.system, scored.system]))
    upload_withdraw(upload=Submission.objects.get(pk=scored.pk), kind=SUBMISSIONS)
    open_one = submit_planned(captioner, demo_dataset, metrics=["rouge_l"], name="Withdrawn while queued")
    upload_withdraw(upload=Submission.objects.get(pk=open_one.pk), kind=SUBMISSIONS)
    cancelled = EvaluationJob.objects.get(system=open_one.system)
    assert cancelled.status == "failed"
    assert cancelled.error == "cancelled: the submission was withdrawn"
    assert EvaluationJob.objects.get(system=scored.system).status == "done"  # a finished job stays
    assert Submission.objects.get(pk=kept.pk).status == "done"

    monkeypatch.setattr(type(get("rouge_l")), "config", lambda self: {"beta": 1.2, "tokenizer": "withdrawn"})
    metrics_sync()
    assert [job.system_id for job in versions_rescore()] == [kept.system_id]


def test_the_reaper_requeues_stuck_batches_and_fails_jobs_past_the_limit(demo_dataset, captioner, settings):
    settings.CAPBENCH_SUBMISSIONS_CONCURRENT = 10
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l", "bleu_1"])
    rouge = EvaluationJob.objects.get(system=submission.system, metric_version__metric__slug="rouge_l")
    bleu = EvaluationJob.objects.get(system=submission.system, metric_version__metric__slug="bleu_1")
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 120)
    JobBatch.objects.filter(job=rouge).update(status="running", started_at=long_ago, attempts=1, worker="gone@x")
    counts = jobs_reap()
    assert counts["requeued"] == 1
    assert JobBatch.objects.get(job=rouge).status == "queued"
    EvaluationJob.objects.filter(pk=bleu.pk).update(queued_at=timezone.now() - timedelta(days=2))
    jobs_reap()
    bleu.refresh_from_db()
    assert bleu.status == "failed"
    assert bleu.error.startswith("stuck: not finished")
    run_jobs([rouge])
    assert Submission.objects.get(pk=submission.pk).status == "failed"  # one metric failed, said so
    assert "bleu_1: stuck" in Submission.objects.get(pk=submission.pk).error


def test_a_restarted_worker_takes_back_what_its_predecessor_held(demo_dataset, captioner):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    JobBatch.objects.filter(job__system=submission.system).update(status="running", worker="w1@host/task-1")
    assert batches_recover_worker(worker="w2@host") == 0
    assert batches_recover_worker(worker="w1@host") == 1
    batch = JobBatch.objects.get(job__system=submission.system)
    assert batch.status == "queued"
    assert batch.enqueued_at is not None


def test_a_batch_whose_worker_dies_every_time_fails_its_job_instead_of_looping(demo_dataset, captioner, settings):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    batch = JobBatch.objects.get(job__system=submission.system)
    # Three starts, no record: what three workers killed by the kernel's OOM killer leave behind.
    JobBatch.objects.filter(pk=batch.pk).update(status="queued", attempts=settings.CAPBENCH_BATCH_ATTEMPTS)
    assert batch_run(batch_id=batch.pk).state == "skipped"
    job = EvaluationJob.objects.get(pk=batch.job_id)
    assert job.status == "failed"
    assert job.error == (
        "batch 1 was started 3 times and its worker stopped each time before it finished (out of memory or killed?)"
    )
    assert not Score.objects.exists()


def test_a_second_delivery_of_a_batch_being_worked_on_is_skipped(demo_dataset, captioner):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    batch = JobBatch.objects.get(job__system=submission.system)
    JobBatch.objects.filter(pk=batch.pk).update(
        status="running", worker="a@host/task-1", started_at=timezone.now(), attempts=1
    )
    heartbeat.beat("a@host")  # worker a is alive
    try:
        assert batch_run(batch_id=batch.pk, worker="b@host/task-2").state == "skipped"  # a duplicate message
        assert JobBatch.objects.get(pk=batch.pk).attempts == 1  # and it used up no attempt
        assert batch_run(batch_id=batch.pk, worker="a@host/task-1").state == "done"  # the same delivery again
    finally:
        heartbeat.stopped("a@host")
    assert Score.objects.filter(caption__system=submission.system).count() == 100


def test_what_a_silent_worker_held_goes_to_another_without_waiting_for_the_time_limit(
    demo_dataset, captioner, settings
):
    """A worker killed on another machine says nothing: its heartbeat stops. The reaper sends its
    batch again at the next sweep, and another worker may take it even from the old message."""
    settings.CAPBENCH_WORKER_HEARTBEAT = 5
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    batch = JobBatch.objects.get(job__system=submission.system)
    started = timezone.now() - timedelta(seconds=10)  # well inside the task time limit
    JobBatch.objects.filter(pk=batch.pk).update(status="running", worker="a@host/task-1", started_at=started)
    EvaluationJob.objects.filter(pk=batch.job_id).update(status="running")
    heartbeat.beat("a@host")
    try:
        assert jobs_reap()["requeued"] == 0  # alive: left alone
        assert JobBatch.objects.get(pk=batch.pk).status == "running"
    finally:
        heartbeat.stopped("a@host")
    assert jobs_reap()["requeued"] == 1  # silent: sent again
    assert JobBatch.objects.get(pk=batch.pk).status == "queued"
    JobBatch.objects.filter(pk=batch.pk).update(status="running", worker="a@host/task-1", started_at=started)
    assert batch_run(batch_id=batch.pk, worker="b@host/task-2").state == "done"  # the old message, taken over
    assert JobBatch.objects.get(pk=batch.pk).worker == "b@host/task-2"


def test_the_reaper_sends_again_the_batches_the_broker_never_took_or_lost(demo_dataset, captioner, settings):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l", "bleu_1"])
    rouge, bleu = (
        JobBatch.objects.get(job__system=submission.system, job__metric_version__metric__slug=slug)
        for slug in ("rouge_l", "bleu_1")
    )
    lost_at = timezone.now() - timedelta(seconds=settings.CAPBENCH_BATCH_RESEND_AFTER + 60)
    JobBatch.objects.filter(pk=rouge.pk).update(enqueued_at=None)  # never reached the broker
    JobBatch.objects.filter(pk=bleu.pk).update(enqueued_at=lost_at)  # sent, then lost
    assert jobs_reap()["resent"] == 2
    assert all(
        at > lost_at for at in JobBatch.objects.filter(pk__in=[rouge.pk, bleu.pk]).values_list("enqueued_at", flat=True)
    )
    assert jobs_reap()["resent"] == 0  # delivered now: not sent again


def test_a_metric_gone_from_the_code_fails_planning_instead_of_retrying(demo_dataset, captioner):
    submission = submit_planned(captioner, demo_dataset, metrics=["rouge_l"])
    Submission.objects.filter(pk=submission.pk).update(metrics=["retired_metric"])
    assert submission_plan(submission_id=submission.pk) == []
    submission.refresh_from_db()
    assert submission.status == "failed"
    assert submission.error.startswith("cannot be scored: unknown metric(s): retired_metric")


def test_corpus_and_mean_numbers_both_get_their_resampled_interval(demo_dataset, captioner):
    """Corpus BLEU from the captions' summed counts, its interval from the counts of each draw of
    images; ROUGE-L the mean of its captions' scores, its interval likewise (scoring.services.numbers)."""
    from capbench_eval import metrics as registry
    from catalog.models import Caption
    from scoring.models import NUMBER_DEFINITION

    submission = submit_planned(
        captioner,
        demo_dataset,
        metrics=["bleu_4", "rouge_l"],
        caption=lambda item: item.references[1] if item.pk % 2 else "a dog on the grass",
    )
    run_jobs(EvaluationJob.objects.filter(system=submission.system))
    bleu = SystemScore.objects.get(system=submission.system, metric_version__metric__slug="bleu_4")
    rouge = SystemScore.objects.get(system=submission.system, metric_version__metric__slug="rouge_l")
    captions = Caption.objects.filter(system=submission.system).select_related("item").order_by("id")
    whole = registry.get("bleu_4").score(
        [registry.CaptionRow(str(c.pk), c.text, tuple(c.item.references)) for c in captions]
    )  # the whole results file scored at once, as COCO's toolkit does: its corpus BLEU
    assert bleu.value == pytest.approx(whole.corpus, rel=1e-12)
    assert bleu.low < bleu.value < bleu.high
    items = demo_dataset.items.count()
    assert (bleu.images, bleu.count, bleu.definition) == (items, items, NUMBER_DEFINITION)
    assert rouge.low < rouge.value < rouge.high
