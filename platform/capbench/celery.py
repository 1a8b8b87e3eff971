"""The Celery application. Workers start with `celery -A capbench worker`."""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "capbench.settings.local")

app = Celery("capbench")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="capbench.ping")
def ping() -> str:
    """Health check: a worker that answers is connected to the broker and the result backend."""
    return "pong"
