"""Metric rows mirror the `capbench_eval` registry: one Metric per slug, one MetricVersion per
(code version, configuration). A changed configuration is a new version; older versions and their
scores stay until the new scores are complete."""

from __future__ import annotations

from django.db import transaction

from capbench_eval import metrics as registry
from capbench_eval.version import VERSION as LIBRARY_VERSION
from scoring.models import Metric, MetricVersion


def metrics_sync() -> list[MetricVersion]:
    """Upsert every registered metric; returns the versions this call created. Runs before every
    plan, so it reads every metric and version in two queries and writes only what differs: with
    nothing changed it is those two reads (docs/performance.md)."""
    created = []
    slugs = registry.slugs()
    with transaction.atomic():
        stored = {metric.slug: metric for metric in Metric.objects.select_for_update().filter(slug__in=slugs)}
        versions = {
            (version.metric.slug, version.config_hash): version
            for version in MetricVersion.objects.filter(metric__slug__in=slugs).select_related("metric")
        }
        for slug in slugs:
            implementation = registry.get(slug)
            wanted = _metric_fields(implementation)
            metric = stored.get(slug)
            if metric is None:
                metric = Metric.objects.update_or_create(slug=slug, defaults=wanted)[0]
            elif any(getattr(metric, name) != value for name, value in wanted.items()):
                for name, value in wanted.items():
                    setattr(metric, name, value)
                metric.save()
            config_hash = implementation.config_hash()
            version = versions.get((slug, config_hash))
            if version is None:
                version, is_new = MetricVersion.objects.get_or_create(
                    metric=metric,
                    config_hash=config_hash,
                    defaults={
                        "version": implementation.version,
                        "config": implementation.config(),
                        "library_version": LIBRARY_VERSION,  # (read by its signature: scoring.signatures)
                    },
                )
                if is_new:
                    created.append(version)
            if metric.current_version_id != version.pk:
                metric.current_version = version
                metric.save(update_fields=["current_version"])
        Metric.objects.exclude(slug__in=slugs).filter(is_registered=True).update(is_registered=False)
    return created


def _metric_fields(implementation) -> dict:
    availability = implementation.availability()
    return {
        "name": implementation.name,
        "family": implementation.family,
        "higher_is_better": implementation.higher_is_better,
        "needs": sorted(implementation.needs),
        "queue": implementation.queue,
        "corpus_dependent": implementation.corpus_dependent,
        "points": implementation.points,
        "aggregation": implementation.aggregation,
        "citation": implementation.citation,
        "description": implementation.description,
        "notes": list(implementation.notes),
        "is_registered": True,
        "available": availability.available,
        "unavailable_reason": availability.reason,
    }


def metric_versions_current(slugs: list[str] | None = None) -> list[MetricVersion]:
    """The registry's versions, synced first, optionally only `slugs` (unknown slugs are refused)."""
    metrics_sync()
    chosen = Metric.objects.filter(is_registered=True).select_related("current_version")
    if slugs:
        unknown = sorted(set(slugs) - set(chosen.values_list("slug", flat=True)))
        if unknown:
            raise registry.UnknownMetric(
                f"unknown metric(s): {', '.join(unknown)} (known: {', '.join(registry.slugs())})"
            )
        chosen = chosen.filter(slug__in=slugs)
    # metrics_sync gave every registered metric its current version
    return [version for metric in chosen.order_by("slug") if (version := metric.current_version) is not None]
