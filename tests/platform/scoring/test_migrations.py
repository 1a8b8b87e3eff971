"""Migrating a database that holds rows: 0006 fills the protocol name and version columns from the
key stored before it (and going back empties them), with the historical models of each state."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("scoring", "0005_metric_notes")]
AFTER = [("scoring", "0006_protocol_name_version")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.fixture
def migrated_back():
    """The database at 0005, latest state restored afterwards whatever the test did."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    yield _migrate(BEFORE)
    _migrate(latest)


def _old_rows(apps) -> dict[str, list[int]]:
    Dataset = apps.get_model("catalog", "Dataset")
    Metric = apps.get_model("scoring", "Metric")
    MetricVersion = apps.get_model("scoring", "MetricVersion")
    CorrelationResult = apps.get_model("scoring", "CorrelationResult")
    SignificanceResult = apps.get_model("scoring", "SignificanceResult")
    dataset = Dataset.objects.create(slug="migrating", title="Migrating", source_format="flickr8k_expert")
    metric = Metric.objects.create(slug="migrating_metric", name="Migrating", family="ngram")
    version = MetricVersion.objects.create(metric=metric, version="1", config_hash="0" * 16, config={})
    keys = ["flickr8k-expert/paper@1", "flickr8k-expert/canonical@2", "a/b/paper@10", "no-protocol-shape"]
    correlations = [
        CorrelationResult.objects.create(
            metric_version=version,
            dataset=dataset,
            dimension="expert",
            statistic="tau_c",
            level="caption",
            protocol=key,
            value=0.3,
            n=10,
        ).pk
        for key in keys
    ]
    significance = [
        SignificanceResult.objects.create(
            dataset=dataset,
            protocol=key,
            level="caption",
            dimension="expert",
            statistic="tau_c",
            metrics=["migrating_metric"],
            values=[0.3],
            p_values=[[None]],
            ranks=[1],
        ).pk
        for key in keys
    ]
    return {"CorrelationResult": correlations, "SignificanceResult": significance}


EXPECTED = [("paper", "1"), ("canonical", "2"), ("paper", "10"), ("", "")]


@pytest.mark.django_db(transaction=True)
def test_0006_fills_protocol_name_and_version_from_existing_rows_and_back(migrated_back):
    created = _old_rows(migrated_back)
    assert "protocol_name" not in {f.name for f in migrated_back.get_model("scoring", "CorrelationResult")._meta.fields}

    forward = _migrate(AFTER)
    for model_name, pks in created.items():
        model = forward.get_model("scoring", model_name)
        found = dict(model.objects.filter(pk__in=pks).values_list("pk", "protocol_name"))
        versions = dict(model.objects.filter(pk__in=pks).values_list("pk", "protocol_version"))
        assert [(found[pk], versions[pk]) for pk in pks] == EXPECTED, model_name
        assert model.objects.filter(pk__in=pks, protocol_name="paper", level="caption").count() == 2

    backward = _migrate(BEFORE)
    model = backward.get_model("scoring", "CorrelationResult")
    assert sorted(
        model.objects.filter(pk__in=created["CorrelationResult"]).values_list("protocol", flat=True)
    ) == sorted(["flickr8k-expert/paper@1", "flickr8k-expert/canonical@2", "a/b/paper@10", "no-protocol-shape"])
    with connection.cursor() as cursor:
        columns = [c.name for c in connection.introspection.get_table_description(cursor, model._meta.db_table)]
    assert "protocol_name" not in columns and "protocol_version" not in columns


@pytest.mark.django_db
def test_rows_saved_with_only_the_key_get_the_columns():
    from catalog.models import Dataset
    from scoring.models import SignificanceResult, protocol_parts

    assert protocol_parts("flickr8k-expert/paper@1") == ("paper", "1")
    assert protocol_parts("x") == ("", "")
    dataset = Dataset.objects.create(slug="saving", title="Saving", source_format="flickr8k_expert")
    row = SignificanceResult.objects.create(
        dataset=dataset,
        protocol="saving/canonical@3",
        dimension="d",
        statistic="tau_c",
        metrics=[],
        values=[],
        p_values=[],
        ranks=[],
    )
    row.refresh_from_db()
    assert (row.protocol_name, row.protocol_version) == ("canonical", "3")
