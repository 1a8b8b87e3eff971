"""Project configuration: settings, URLs, the Celery app and WSGI entry point."""

from capbench.celery import app as celery_app

__all__ = ["celery_app"]
