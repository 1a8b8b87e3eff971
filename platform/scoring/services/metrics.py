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
    nothing changed it is those two reads, and what it makes (every row, on a new database) it makes
    in one statement a table (docs/performance.md)."""
    slugs = registry.slugs()
    wanted = {slug: _metric_fields(registry.get(slug)) for slug in slugs}
    hashes = {slug: registry.get(slug).config_hash() for slug in slugs}
    with transaction.atomic():
        stored = _metrics_locked(wanted)
        for slug, fields in wanted.items():
            metric = stored[slug]
            if any(getattr(metric, name) != value for name, value in fields.items()):
                for name, value in fields.items():
                    setattr(metric, name, value)
                metric.save()
        # (read once the metrics are locked: no other sync makes the same version meanwhile)
        known = {
            (metric_id, config_hash): pk
            for pk, metric_id, config_hash in MetricVersion.objects.filter(metric__in=stored.values()).values_list(
                "pk", "metric_id", "config_hash"
            )
        }
        created = MetricVersion.objects.bulk_create(
            [_version(stored[slug], slug) for slug in slugs if (stored[slug].pk, hashes[slug]) not in known]
        )
        known.update({(version.metric_id, version.config_hash): version.pk for version in created})
        moved = [
            metric for slug, metric in stored.items() if metric.current_version_id != known[metric.pk, hashes[slug]]
        ]
        for metric in moved:
            metric.current_version_id = known[metric.pk, hashes[metric.slug]]
        Metric.objects.bulk_update(moved, ["current_version"])
        Metric.objects.exclude(slug__in=slugs).filter(is_registered=True).update(is_registered=False)
    return created


def _metrics_locked(wanted: dict[str, dict]) -> dict[str, Metric]:
    """Each registered metric's row, locked (this call changes and versions them one process at a
    time); those missing are made first, together (another process making one too is no error)."""
    stored = {metric.slug: metric for metric in Metric.objects.select_for_update().filter(slug__in=wanted)}
    missing = [slug for slug in wanted if slug not in stored]
    if missing:
        Metric.objects.bulk_create([Metric(slug=slug, **wanted[slug]) for slug in missing], ignore_conflicts=True)
        stored.update({metric.slug: metric for metric in Metric.objects.select_for_update().filter(slug__in=missing)})
    return stored


def _version(metric: Metric, slug: str) -> MetricVersion:
    implementation = registry.get(slug)
    return MetricVersion(
        metric=metric,
        config_hash=implementation.config_hash(),
        version=implementation.version,
        config=implementation.config(),
        library_version=LIBRARY_VERSION,  # (read by its signature: scoring.signatures)
    )


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
