"""Machines that share no disk (issue 16): two Celery workers, each with its own working directory,
media folder and read cache, a web process with its own, PostgreSQL, Valkey and an S3-compatible
object store (moto in server mode, standing in for MinIO or S3). Images attached here go to the
object store; a submission needing them (CLIP-S on a tiny CLIP, and a slow test metric that reads
each picture's bytes) is scored by whichever worker takes each batch; one worker is killed mid-job
and the other finishes it; the web process shows an item's picture, read from the object store."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
from django.conf import settings
from django.core.management import call_command

import tests.platform.scoring.plugins  # noqa: F401  (test_image_bytes, here as in the workers)
from capbench.settings.files import object_storage
from catalog.models import Item, Media
from catalog.services.media import media_attach
from plumbing import storage
from scoring.models import EvaluationJob, JobBatch, Score
from scoring.services.reaper import jobs_reap
from submissions.models import Submission
from tests.platform.scoring.workers import wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BUCKET = "capbench-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers, whatever it says
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not answer within {seconds} s"
            time.sleep(0.3)


@pytest.fixture
def object_store(tmp_path, monkeypatch, settings):
    """moto's S3 server in its own process, a bucket, and this process's storage pointed at it."""
    port = _free_port()
    log = (tmp_path / "moto.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    endpoint = f"http://127.0.0.1:{port}"
    environment = {
        "CAPBENCH_S3_BUCKET": BUCKET,
        "CAPBENCH_S3_ENDPOINT_URL": endpoint,
        "CAPBENCH_S3_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "capbench-test",
        "AWS_SECRET_ACCESS_KEY": "capbench-test-secret",
    }
    for key, value in environment.items():
        monkeypatch.setenv(key, value)
    try:
        _answers(endpoint)
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=BUCKET)
        settings.STORAGES = {**settings.STORAGES, "default": object_storage(BUCKET, endpoint, "us-east-1", "")}
        yield environment
    finally:
        server.terminate()
        server.wait(timeout=30)


def _machine(root: Path, name: str, store: Path) -> dict[str, str]:
    """A machine's own folders: nothing under them is shared with any other process."""
    home = root / name
    (home / "work").mkdir(parents=True)
    return {
        "cwd": str(home / "work"),
        "CAPBENCH_STATE_DIR": str(home / "state"),
        "CAPBENCH_MEDIA_ROOT": str(home / "media"),
        "CAPBENCH_FILE_CACHE": str(home / "file-cache"),
        "CAPBENCH_FEATURE_DIR": str(home / "features"),
        "CAPBENCH_GENERATED_DIR": str(home / "generated"),
        "CAPBENCH_MODEL_DIR": str(store),  # each machine has its own copy of the weights
    }


def _pictures(dataset, folder: Path) -> dict[str, bytes]:
    """A random PNG for each declared image, named as the dataset declares it."""
    from PIL import Image

    folder.mkdir()
    rng = np.random.default_rng(3)
    written = {}
    for media in Media.objects.filter(dataset=dataset).order_by("id"):
        buffer = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(buffer, format="PNG")
        (folder / media.name).write_bytes(buffer.getvalue())
        written[media.name] = buffer.getvalue()
    return written


def _web(repo_root: Path, machine: dict[str, str], environment: dict[str, str], port: int, log: Path):
    database = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + settings.DATABASES["default"]["NAME"])
    env = {
        **os.environ,
        **{key: value for key, value in machine.items() if key != "cwd"},
        **environment,
        "DATABASE_URL": database.geturl(),
        "DJANGO_SETTINGS_MODULE": "capbench.settings.test",
        "CAPBENCH_WEB_WORKERS": "1",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            "python:capbench.gunicorn",
            "capbench.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
        ],
        env=env,
        cwd=machine["cwd"],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_workers_and_web_share_nothing_but_the_database_the_broker_and_the_object_store(
    object_store, workers, model_store, demo_dataset, captioner, repo_root, tmp_path, settings
):
    settings.CAPBENCH_WORKER_HEARTBEAT = 3
    Media.objects.filter(dataset=demo_dataset).update(expected_md5="")  # random pictures, not the manifest's
    pictures = _pictures(demo_dataset, tmp_path / "upload")
    outcome = media_attach(dataset=demo_dataset, directory=tmp_path / "upload")
    assert len(outcome.attached) == 100 and not outcome.checksum_mismatch
    stored = Media.objects.get(dataset=demo_dataset, name=next(iter(pictures)))
    assert storage.open_stored(stored.stored_path).read() == pictures[stored.name]  # in the object store
    assert not Path(settings.MEDIA_ROOT, stored.stored_path).exists()  # not on this machine's disk

    machines = {name: _machine(tmp_path, name, model_store) for name in ("left", "right", "web")}
    common = {**object_store, "PYTHONPATH": str(repo_root), "CAPBENCH_BATCH_SIZE_GPU": "4"}
    common |= {"CAPBENCH_WORKER_HEARTBEAT": "3", "CAPBENCH_METRIC_PLUGINS": "tests.platform.scoring.plugins"}
    common |= {"CAPBENCH_BATCH_SIZE_CPU": "4", "CAPBENCH_TEST_PAUSE": "0.5", "CAPBENCH_LOG_FORMAT": "json"}
    started = {}
    for name in ("left", "right"):
        folders = {key: value for key, value in machines[name].items() if key != "cwd"}
        started[name] = workers.start(name, cwd=Path(machines[name]["cwd"]), **folders, **common)
    port = _free_port()
    web = _web(repo_root, machines["web"], object_store, port, tmp_path / "web.log")
    try:
        results = tmp_path / "captions.json"
        items = list(Item.objects.filter(dataset=demo_dataset).select_related("media").order_by("id"))
        results.write_text(
            "[" + ",".join(f'{{"image_id": "{item.external_id}", "caption": "a photo"}}' for item in items) + "]"
        )
        call_command(
            "submit", "demo", str(results), "--user", "captioner", "--name", "No shared disk",
            "--metric", "clip_s", "--metric", "test_image_bytes", stdout=io.StringIO(),
        )  # fmt: skip
        job = wait_until(
            lambda: EvaluationJob.objects.filter(metric_version__metric__slug="test_image_bytes").first(),
            60,
            workers,
            "planning",
        )
        wait_until(
            lambda: (
                JobBatch.objects.filter(job=job, status="done", worker__startswith="left@").exists()
                and JobBatch.objects.filter(job=job, status="running", worker__startswith="left@").exists()
            ),
            120,
            workers,
            "the left worker holding a batch, with one done",
        )
        workers.kill(started["left"])
        held = list(JobBatch.objects.filter(job=job, status="running", worker__startswith="left@"))
        assert held, "the kill must land while the left worker holds a batch"

        # The periodic sweep (beat's, every CAPBENCH_REAP_EVERY seconds) finds the batch held by a
        # worker whose heartbeat stopped and sends it again; the right worker takes it.
        last_sweep = [0.0]

        def swept_until_done() -> bool:
            if time.monotonic() - last_sweep[0] > 2:
                jobs_reap()
                last_sweep[0] = time.monotonic()
            return Submission.objects.get().status == "done"

        wait_until(swept_until_done, 240, workers, "the right worker finishing")
        for done in EvaluationJob.objects.select_related("metric_version__metric"):
            assert (done.status, done.done, done.failed) == ("done", 100, 0), (
                done.metric_version.metric.slug,
                done.error,
            )
        by_worker = {
            worker.split("@")[0] for worker in JobBatch.objects.filter(job=job).values_list("worker", flat=True)
        }
        assert by_worker == {"left", "right"}, by_worker  # each took batches
        assert JobBatch.objects.get(pk=held[0].pk).worker.startswith("right@")  # the killed one's, finished
        sizes = dict(Score.objects.filter(metric_version=job.metric_version).values_list("caption__item_id", "value"))
        by_item = {item.pk: len(pictures[item.media.name]) for item in Item.objects.select_related("media")}
        assert sizes == {pk: by_item[pk] for pk in sizes}
        assert len(sizes) == 100  # the bytes of each picture
        assert Score.objects.filter(metric_version__metric__slug="clip_s", value__isnull=False).count() == 100
        for name in ("left", "right"):  # each read the pictures through its own cache
            cached = [path for path in Path(machines[name]["CAPBENCH_FILE_CACHE"]).rglob("*") if path.is_file()]
            assert cached, f"the {name} worker never read a picture from the object store"
            assert not Path(machines[name]["CAPBENCH_MEDIA_ROOT"]).exists()

        # Each worker's log is JSON lines naming the job and batch of each stored batch.
        batch_lines = [
            json.loads(line)
            for path in tmp_path.glob("right-*.log")
            for line in path.read_text().splitlines()
            if line.startswith("{") and "stored:" in line
        ]
        mine = [entry for entry in batch_lines if entry["job_id"] == job.pk and entry["worker"] == "right@test"]
        assert mine, batch_lines[:3]
        assert all({"batch_id", "task_id", "metric", "time", "level"} <= set(entry) for entry in batch_lines)

        # The web process shows the picture, from the object store.
        _answers(f"http://127.0.0.1:{port}/")
        item = items[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/datasets/demo/items/{item.pk}/", timeout=10) as page:
            html = page.read().decode()
        source = re.search(r'<img class="picture" src="([^"]+)"', html)
        assert source, html[:3000]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{source.group(1)}", timeout=10) as picture:
            assert hashlib.sha256(picture.read()).hexdigest() == item.media.sha256
        assert not Path(machines["web"]["CAPBENCH_MEDIA_ROOT"]).exists()
    finally:
        if web.poll() is None:
            os.killpg(web.pid, signal.SIGTERM)
            web.wait(timeout=30)
