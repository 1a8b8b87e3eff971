"""metrics_sync (scoring/services/metrics.py) on a new database, with two processes starting at
once (two web processes or workers planning their first job): each metric and each version is made
once, by one of them."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from capbench_eval import metrics as registry
from scoring.models import Metric, MetricVersion
from scoring.services.metrics import metrics_sync


@pytest.mark.django_db(transaction=True)
def test_two_syncs_at_once_on_a_new_database_make_each_metric_and_version_once():
    Metric.objects.update(current_version=None)
    MetricVersion.objects.all().delete()
    Metric.objects.all().delete()
    start = threading.Barrier(2)
    created: list[list[MetricVersion]] = []
    errors: list[Exception] = []

    def sync() -> None:
        try:
            start.wait()
            created.append(metrics_sync())
        except Exception as error:  # (reported by the asserts below)
            errors.append(error)
        finally:
            connection.close()

    syncs = [threading.Thread(target=sync) for _ in range(2)]
    for thread in syncs:
        thread.start()
    for thread in syncs:
        thread.join(timeout=60)
    assert errors == []
    assert sorted(Metric.objects.values_list("slug", flat=True)) == sorted(registry.slugs())
    made = sorted(version.pk for versions in created for version in versions)
    assert made == sorted(MetricVersion.objects.values_list("pk", flat=True))
    assert MetricVersion.objects.count() == len(registry.slugs())
    assert not Metric.objects.filter(current_version__isnull=True).exists()
