"""Celery tasks of the workbench: thin, taking primary keys and calling one service each."""

from __future__ import annotations

from celery import shared_task

from workbench import services


@shared_task(name=services.CORRELATE_TASK, bind=True, max_retries=3)
def correlate_upload(self, upload_id: int) -> str:
    try:
        return services.upload_correlate(upload_id=upload_id).status
    except Exception as error:
        if self.request.retries >= self.max_retries:
            services.upload_failed(upload_id=upload_id, error=f"{type(error).__name__}: {error}")
            raise
        raise self.retry(exc=error, countdown=2**self.request.retries) from error


@shared_task(name=services.SIGNIFICANCE_TASK)
def significance(submission_id: int) -> None:
    services.metric_significance(submission_id=submission_id)


@shared_task(name="workbench.reap")
def reap() -> int:
    return services.uploads_dispatch_pending()
