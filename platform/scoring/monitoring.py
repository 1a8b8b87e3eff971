"""What the workers are doing, for monitoring: messages waiting per queue, jobs and batches by state,
and per metric the batches' time, failures and the scores written. Counts over every job, private
submissions' included, with no caption or name: only staff or the operations token see them
(api.ops). Uploaded metrics share one label (metric_label), so the label set stays the registry's."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis
from django.db.models import Case, CharField, Count, F, Q, Sum, Value, When

from plumbing import heartbeat, valkey
from scoring.models import EvaluationJob, JobBatch
from scoring.queues import KINDS, queue_name

# Kombu's Redis transport keeps a queue's messages in one list per priority step: the queue's own
# name for the default priority, the name + "\x06\x16" + step for the others.
PRIORITY_STEPS = (0, 3, 6, 9)
UPLOADED = "uploaded"  # the one `metric` label of every uploaded metric (metric_label)


@dataclass
class MetricWork:
    batches_done: int = 0
    batch_seconds: float = 0.0
    batches_failed: int = 0
    captions_failed: int = 0
    scores_written: int = 0


@dataclass
class Work:
    queue_messages: dict[str, int | None] = field(default_factory=dict)  # None: the broker did not answer
    jobs: dict[str, int] = field(default_factory=dict)
    batches: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, MetricWork] = field(default_factory=dict)
    workers: list[str] | None = None  # the workers whose heartbeat is current (None: unknown)


def queue_lengths() -> dict[str, int | None]:
    client = valkey.client()
    lengths: dict[str, int | None] = {}
    for kind in KINDS:
        name = queue_name(kind)
        keys = [name if step == 0 else f"{name}\x06\x16{step}" for step in PRIORITY_STEPS]
        try:
            lengths[kind] = sum(int(client.llen(key)) for key in keys)
        except redis.RedisError:
            lengths[kind] = None
    return lengths


def work_now() -> Work:
    work = Work(queue_messages=queue_lengths(), workers=heartbeat.alive_workers())
    jobs = dict(EvaluationJob.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    work.jobs = {state: jobs.get(state, 0) for state in EvaluationJob.Status.values}
    batches = dict(JobBatch.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
    work.batches = {state: batches.get(state, 0) for state in JobBatch.Status.values}
    done, failed = JobBatch.Status.DONE, JobBatch.Status.FAILED
    batches_per_metric = (
        JobBatch.objects.annotate(label=metric_label("job__metric_version__metric__"))
        .values_list("label")
        .annotate(
            done=Count("id", filter=Q(status=done)),
            seconds=Sum("seconds", filter=Q(status=done)),
            failed=Count("id", filter=Q(status=failed)),
        )
    )
    for label, batches_done, seconds, batches_failed in batches_per_metric:
        metric = work.metrics.setdefault(label, MetricWork())
        metric.batches_done, metric.batch_seconds, metric.batches_failed = batches_done, seconds or 0.0, batches_failed
    jobs_per_metric = (
        EvaluationJob.objects.annotate(label=metric_label("metric_version__metric__"))
        .values_list("label")
        .annotate(done=Sum("done"), failed=Sum("failed"))
    )
    for label, captions_done, captions_failed in jobs_per_metric:
        metric = work.metrics.setdefault(label, MetricWork())
        metric.captions_failed = captions_failed or 0
        metric.scores_written = (captions_done or 0) - metric.captions_failed
    return work


def metric_label(to_metric: str) -> Case:
    """A metric's `metric` label, over the path `to_metric`: a built-in metric's slug; UPLOADED for
    every metric a researcher uploaded, public, private or withdrawn alike. Their slugs would name
    private work on the page and add a label with every upload; the built-in ones are the code's."""
    return Case(
        When(**{f"{to_metric}submission__isnull": False}, then=Value(UPLOADED)),
        default=F(f"{to_metric}slug"),
        output_field=CharField(),
    )


def prometheus_text(work: Work) -> str:
    """The Prometheus text exposition format (version 0.0.4)."""
    lines: list[str] = []

    def family(name: str, kind: str, text: str, samples: list[tuple[str, float]]) -> None:
        lines.extend([f"# HELP {name} {text}", f"# TYPE {name} {kind}"])
        lines.extend(f"{name}{labels} {value:g}" for labels, value in samples)

    family(
        "capbench_queue_messages",
        "gauge",
        "Messages waiting in each Celery queue (-1: the broker did not answer).",
        [(f'{{queue="{kind}"}}', -1 if n is None else n) for kind, n in work.queue_messages.items()],
    )
    family(
        "capbench_workers_alive",
        "gauge",
        "Celery workers whose heartbeat is current (-1: the broker did not answer).",
        [("", -1 if work.workers is None else len(work.workers))],
    )
    family(
        "capbench_worker_up",
        "gauge",
        "1 for each worker beating now.",
        [(f'{{worker="{w}"}}', 1) for w in work.workers or []],
    )
    family(
        "capbench_jobs", "gauge", "Evaluation jobs by state.", [(f'{{state="{s}"}}', n) for s, n in work.jobs.items()]
    )
    family(
        "capbench_batches", "gauge", "Job batches by state.", [(f'{{state="{s}"}}', n) for s, n in work.batches.items()]
    )
    per = sorted(work.metrics.items())
    family(
        "capbench_batch_seconds",
        "summary",
        "Seconds inside the metric per finished batch.",
        [(f'_sum{{metric="{m}"}}', w.batch_seconds) for m, w in per]
        + [(f'_count{{metric="{m}"}}', w.batches_done) for m, w in per],
    )
    family(
        "capbench_batches_failed_total",
        "counter",
        "Batches that failed after their retries.",
        [(f'{{metric="{m}"}}', w.batches_failed) for m, w in per],
    )
    family(
        "capbench_captions_failed_total",
        "counter",
        "Captions a metric could not score.",
        [(f'{{metric="{m}"}}', w.captions_failed) for m, w in per],
    )
    family(
        "capbench_scores_written_total",
        "counter",
        "Scores stored.",
        [(f'{{metric="{m}"}}', w.scores_written) for m, w in per],
    )
    return "\n".join(lines) + "\n"
