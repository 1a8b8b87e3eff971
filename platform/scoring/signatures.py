"""A stored metric version's readable signature (docs/library.md, "Signatures"): the one function every
surface reads (a board column's tooltip, a metric's page, the API, a board's CSV, a citable snapshot),
so that no page builds the string itself. The library prints the same line for the same
configuration (capbench_eval.signatures).

- A version of a registered metric: `capbench_eval.signatures.signature_of` on what the row stores
  (slug, version, configuration, the library release that computed it) and what the metric's class
  declares (how a system's number is formed, whether it reads references, whether its per-caption
  scores depend on the whole set). For a version created now it is `signature(get(slug))`.
- A version of a metric the code no longer has: the same, with what `metrics_sync` last stored on the
  Metric row in place of the class.
- A researcher's uploaded scores (workbench: no class, no library computed them), which the boards
  average (scoring.services.numbers.metric_aggregation):
  `<slug>|v:<upload number>|uploaded|scores:<the files' digest, 16 hex>|refs:all|none|sys:mean`.

A version whose row does not say which library computed it (one written outside `metrics_sync`)
reads `capbench-eval:unknown`."""

from __future__ import annotations

from collections.abc import Iterable

from capbench_eval import metrics as registry
from capbench_eval.signatures import signature_of
from scoring.models import MetricVersion

UPLOADED_KEY = "submitted"  # the configuration key of an uploaded version (workbench.services._upload)
UNKNOWN_LIBRARY = "unknown"


def version_signature(version: MetricVersion) -> str:
    """The signature of a stored metric version (reads `version.metric`: select it with the version)."""
    metric = version.metric
    config = version.config or {}
    if UPLOADED_KEY in config and not metric.is_registered:
        read = "all" if "references" in (metric.needs or []) else "none"
        fields = [metric.slug, f"v:{version.version}", "uploaded", f"scores:{version.config_hash}"]
        return "|".join([*fields, f"refs:{read}", f"sys:{metric.aggregation}"])
    try:
        declared = registry.get(metric.slug)
        aggregation, references = declared.aggregation, "references" in declared.needs
        corpus_dependent = declared.corpus_dependent
    except registry.UnknownMetric:
        aggregation, references = metric.aggregation, "references" in (metric.needs or [])
        corpus_dependent = metric.corpus_dependent
    return signature_of(
        metric.slug,
        version.version,
        config,
        aggregation=aggregation,
        references=references,
        corpus_dependent=corpus_dependent,
        library=version.library_version or UNKNOWN_LIBRARY,
    )


def version_signatures(version_ids: Iterable[int]) -> dict[int, str]:
    """version_signature of each of `version_ids`, read in one query (a board's cells)."""
    found = MetricVersion.objects.filter(pk__in=set(version_ids)).select_related("metric")
    return {version.pk: version_signature(version) for version in found}
