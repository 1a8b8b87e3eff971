"""/ops/metrics: the workers' state in Prometheus' text format, for staff or the operations token
only (a 404 for anyone else: the counts include private submissions' jobs)."""

import re

import pytest
import redis
from django.conf import settings

from scoring.models import EvaluationJob, JobBatch, Metric, MetricVersion
from scoring.queues import queue_name
from tests.platform.factories import UserFactory

pytestmark = pytest.mark.django_db


def sample(text: str, name: str, labels: str) -> float:
    found = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.M)
    assert found, f"{name}{labels} not in:\n{text}"
    return float(found.group(1))


@pytest.fixture
def work(demo_dataset):
    metric = Metric.objects.create(slug="ops_metric", name="Ops metric", family="ngram")
    version = MetricVersion.objects.create(metric=metric, version="1", config_hash="0" * 16)
    job = EvaluationJob.objects.create(
        purpose="dataset", dataset=demo_dataset, metric_version=version, status="running", done=30, failed=2
    )
    JobBatch.objects.create(job=job, index=0, caption_ids=[], status="done", seconds=1.5)
    JobBatch.objects.create(job=job, index=1, caption_ids=[], status="done", seconds=2.0)
    JobBatch.objects.create(job=job, index=2, caption_ids=[], status="failed")
    JobBatch.objects.create(job=job, index=3, caption_ids=[], status="queued")
    broker = redis.Redis.from_url(settings.REDIS_URL)
    broker.delete(queue_name("gpu"))
    broker.rpush(queue_name("gpu"), "m1", "m2", "m3")
    yield job
    broker.delete(queue_name("gpu"))


def test_staff_read_queues_jobs_batches_and_per_metric_work(client, work, django_user_model):
    client.force_login(UserFactory(username="operator", is_staff=True))
    response = client.get("/ops/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    text = response.content.decode()
    assert sample(text, "capbench_queue_messages", '{queue="gpu"}') == 3
    assert sample(text, "capbench_jobs", '{state="running"}') == EvaluationJob.objects.filter(status="running").count()
    assert sample(text, "capbench_batches", '{state="failed"}') == 1
    assert sample(text, "capbench_batch_seconds_sum", '{metric="ops_metric"}') == 3.5
    assert sample(text, "capbench_batch_seconds_count", '{metric="ops_metric"}') == 2
    assert sample(text, "capbench_batches_failed_total", '{metric="ops_metric"}') == 1
    assert sample(text, "capbench_captions_failed_total", '{metric="ops_metric"}') == 2
    assert sample(text, "capbench_scores_written_total", '{metric="ops_metric"}') == 28
    assert "# TYPE capbench_batch_seconds summary" in text


def test_the_workers_beating_now_are_listed(client, work, django_user_model, settings):
    from plumbing.heartbeat import Heartbeat

    settings.CAPBENCH_WORKER_HEARTBEAT = 30
    client.force_login(UserFactory(username="operator", is_staff=True))
    before = sample(client.get("/ops/metrics").content.decode(), "capbench_workers_alive", "")
    beating = Heartbeat("ops-test@machine-a").start()
    try:
        text = client.get("/ops/metrics").content.decode()
        assert sample(text, "capbench_worker_up", '{worker="ops-test@machine-a"}') == 1
        assert sample(text, "capbench_workers_alive", "") == before + 1
    finally:
        beating.stop()
    assert 'worker="ops-test@machine-a"' not in client.get("/ops/metrics").content.decode()  # a clean stop says so


def test_health_says_whether_the_database_and_the_broker_answer(client, settings):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"database": "ok", "broker": "ok"}
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"database": "ok", "broker": "unreachable"}


def test_only_staff_or_the_token_see_it(client, work, captioner, settings):
    assert client.get("/ops/metrics").status_code == 404
    client.force_login(captioner)
    assert client.get("/ops/metrics").status_code == 404
    client.logout()
    assert client.get("/ops/metrics", HTTP_AUTHORIZATION="Bearer anything").status_code == 404  # no token set
    settings.CAPBENCH_OPS_TOKEN = "s3cret-token"
    assert client.get("/ops/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 404
    assert client.get("/ops/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 200
    assert client.post("/ops/metrics", HTTP_AUTHORIZATION="Bearer s3cret-token").status_code == 405


def test_uploaded_metrics_share_one_label_whatever_their_visibility(client, work, captioner, django_user_model):
    """A researcher's uploaded metric, private, withdrawn or public, is counted under `uploaded`: its
    slug would name private work on the page, and a label per upload would grow without bound."""
    from workbench.models import MetricSubmission

    for slug, done, public, status in (
        ("qzsecret-metric-a1b2c3", 40, False, "active"),
        ("qzwithdrawn-metric-d4e5f6", 7, True, "withdrawn"),
        ("qzpublic-metric-0a0b0c", 10, True, "active"),
    ):
        metric = Metric.objects.create(slug=slug, name=slug, family="submitted", is_registered=False)
        MetricSubmission.objects.create(owner=captioner, metric=metric, is_public=public, status=status)
        version = MetricVersion.objects.create(metric=metric, version="1", config_hash=slug[:16])
        EvaluationJob.objects.create(
            purpose="dataset", dataset=work.dataset, metric_version=version, status="done", done=done
        )
    client.force_login(UserFactory(username="operator", is_staff=True))
    text = client.get("/ops/metrics").content.decode()
    assert "qz" not in text  # no uploaded metric's slug
    assert sample(text, "capbench_scores_written_total", '{metric="uploaded"}') == 57
    assert sample(text, "capbench_scores_written_total", '{metric="ops_metric"}') == 28  # a built-in keeps its own
    labels = set(re.findall(r'metric="([^"]+)"', text))
    assert labels == {"ops_metric", "uploaded"}
