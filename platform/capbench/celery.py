"""The Celery application. Workers start with `celery -A capbench worker`."""

import os

from celery import Celery
from celery.signals import worker_init
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")

app = Celery("capbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_init.connect
def database_without_pool(**_) -> None:
    """A worker connects to the database per task, without the web process's connection pool.

    Celery's Django fix-up closes every connection before and after each task (and, under prefork,
    the whole pool), so a pool gives a worker nothing to reuse; and a pool opened in the main
    process (the batch recovery at start-up) would be inherited, threads and locks included, by
    every child forked later. Runs in the main process before anything touches the database."""
    for database in settings.DATABASES.values():
        database.get("OPTIONS", {}).pop("pool", None)


@app.task(name="capbench.ping")
def ping() -> str:
    """Health check: a worker that answers is connected to the broker and the result backend."""
    return "pong"
