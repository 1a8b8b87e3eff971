"""A worker process starts, as it starts, what the metrics of its queues would otherwise start on
their first batch: METEOR's JVM (its paraphrase tables take seconds to load, its hot paths seconds
more to compile), the PTB tokenizer's (`Metric.warm`); and it computes the configurations the first
task would (a batch checks its metric's, planning, on the cpu queue, every metric's: for some that
means importing torch, two seconds). It runs in a thread of each pool process, after the fork, because a JVM's pipe
opened before the fork would be shared by every child, each reading the others' answers; and in a
thread because a pool child that takes seconds to start is killed by Celery (worker_proc_alive_timeout),
while a batch arriving meanwhile only waits for the metric's own lock. Never fatal: a metric that
cannot start (no Java) is logged, and its jobs say why when they run ("unavailable: ..."). Once done,
the process is recorded in Redis (plumbing.heartbeat.warmed). Off with CAPBENCH_WORKER_WARMUP=0."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from capbench_eval import metrics as registry
from plumbing import heartbeat
from scoring.queues import KINDS, queue_name

log = logging.getLogger(__name__)
# Plans and the periodic sweep run on the cpu queue: they sync every registered metric's configuration.
PLANNING_KIND = "cpu"


@dataclass
class WarmUp:
    seconds: float = 0.0
    warmed: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def served_kinds(queue_names: Iterable[str]) -> list[str]:
    """The queue kinds (cpu, gpu, api) among the names a worker consumes from."""
    names = set(queue_names)
    return [kind for kind in KINDS if queue_name(kind) in names]


def metrics_warm(*, kinds: Iterable[str]) -> WarmUp:
    """`warm()` on every registered metric whose queue is one of `kinds`; errors logged, not raised."""
    kinds = set(kinds)
    started, outcome = time.perf_counter(), WarmUp()
    for slug in registry.slugs():
        try:
            metric = registry.get(slug)
            if metric.queue not in kinds and PLANNING_KIND not in kinds:
                continue
            metric.config_hash()
            if metric.queue not in kinds:
                continue
            availability = metric.availability()
            if not availability.available:
                outcome.unavailable[slug] = availability.reason
                log.debug("%s not warmed: unavailable (%s)", slug, availability.reason)  # (the summary names it)
                continue
            metric.warm()
        except Exception as error:  # a metric that cannot start must not stop the worker, nor the others
            outcome.failed[slug] = f"{type(error).__name__}: {error}"
            log.warning("%s could not be warmed up; its first batch will try again", slug, exc_info=True)
        else:
            outcome.warmed.append(slug)
    outcome.seconds = time.perf_counter() - started
    return outcome


def process_warm(*, hostname: str, kinds: Iterable[str]) -> WarmUp:
    """This process warmed up for `kinds`, and recorded as warm for `hostname`."""
    outcome = metrics_warm(kinds=kinds)
    log.info(
        "worker process %d warmed up in %.1f s (%d metrics%s)",
        os.getpid(), outcome.seconds, len(outcome.warmed),
        f"; not: {', '.join(sorted({**outcome.unavailable, **outcome.failed}))}"
        if outcome.unavailable or outcome.failed else "",
    )  # fmt: skip
    try:
        heartbeat.warmed(hostname, os.getpid(), outcome.seconds)
    except Exception:  # Redis away: only a benchmark waiting on it would notice
        log.warning("worker process %d: its warm-up is not recorded", os.getpid(), exc_info=True)
    return outcome


def warm_in_background(*, hostname: str, kinds: Iterable[str]) -> threading.Thread:
    thread = threading.Thread(
        target=process_warm,
        kwargs={"hostname": hostname, "kinds": list(kinds)},
        name="capbench-warmup",
        daemon=True,
    )
    thread.start()
    return thread
