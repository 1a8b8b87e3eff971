"""A metric's page as one model (MetricPage): its correlations on a dataset (the dataset's own
protocols, then each live campaign's) and, for the charts, its stored scores beside the human
judgments, in the metric's points."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from campaigns.models import Campaign
from campaigns.selectors import campaign_of_protocol
from catalog.models import Caption, Dataset, Judgment
from catalog.visibility import references_visible
from leaderboards import charts
from leaderboards.caching import kept_fragment
from leaderboards.charts import MetricOnDataset
from leaderboards.metric_board import metric_board_version
from scoring.models import CorrelationResult, EvaluationJob, Metric, MetricVersion, Score
from scoring.signatures import version_signature
from workbench.selectors import SubmittedMetric, submitted_metric


def metric_correlations(*, metric: Metric, dataset: Dataset) -> tuple[list[CorrelationResult], dict[str, Campaign]]:
    """The metric's correlations on `dataset` (a metric page's table): the dataset's own protocols
    first, then each live campaign's (a deleted campaign's left out); and the campaign of each live
    protocol key."""
    results = list(
        CorrelationResult.objects.filter(metric_version__metric=metric, dataset=dataset)
        .select_related("metric_version")
        .order_by("protocol", "level", "dimension", "statistic")
    )
    live = {r.protocol for r in results if r.protocol_name == "live"}
    campaigns = {protocol: found for protocol in sorted(live) if (found := campaign_of_protocol(protocol))}
    results = [r for r in results if r.protocol_name != "live"] + [r for r in results if r.protocol in campaigns]
    return results, campaigns


def metric_charted_version(*, metric: Metric, dataset: Dataset) -> MetricVersion | None:
    """The version the metric page charts on the dataset: the newest whose dataset job is done."""
    return (
        metric.versions.filter(jobs__dataset=dataset, jobs__system__isnull=True, jobs__status=EvaluationJob.Status.DONE)
        .order_by("-created_at")
        .first()
    )


def metric_on_dataset(
    *, metric: Metric, dataset: Dataset, dimension: str | None = None, version: MetricVersion | None = None
) -> MetricOnDataset | None:
    """The charted version's (metric_charted_version, unless given) stored scores beside the human
    judgments (rating datasets)."""
    version = version or metric_charted_version(metric=metric, dataset=dataset)
    if version is None:
        return None
    own = Caption.objects.own().filter(item__dataset=dataset)
    scores = dict(Score.objects.filter(metric_version=version, caption__in=own).values_list("caption_id", "value"))
    judgments = Judgment.objects.filter(caption__in=own)
    if dimension:
        judgments = judgments.filter(dimension=dimension)
    pairs = [(value, scores.get(caption)) for caption, value in judgments.values_list("caption_id", "value")]
    kept = [(h, m) for h, m in pairs if m is not None]
    values = [value for value in scores.values() if value is not None]
    # Charted in the metric's points, as every page shows its numbers (0–1 metrics ×100).
    scale = metric.points
    name = metric.name if scale == 1 else f"{metric.name} (×{scale:g})"
    return MetricOnDataset(
        name,
        np.array([h for h, _ in kept], dtype=float),
        scale * np.array([m for _, m in kept], dtype=float),
        scale * np.array(values, dtype=float),
        failed=len(scores) - len(values),
    )


@dataclass
class MetricPage:
    """A metric's page: the datasets it has correlations on, the chosen one's correlations and
    charts (a rating dataset's scatter, heatmap and distribution, in the metric's points; a pairwise
    one's accuracy by category), its configuration, and a submitted metric's upload."""

    metric: Metric
    datasets: list[Dataset]
    dataset: Dataset | None
    results: list[CorrelationResult] = field(default_factory=list)
    campaigns: dict[str, Campaign] = field(default_factory=dict)
    figures: dict = field(default_factory=dict)
    charts_shown: bool = False
    submitted: SubmittedMetric | None = None  # a submitted metric's upload and its checks
    is_owner: bool = False

    @property
    def trained_on(self) -> set[int]:
        """The datasets a submitted metric's authors say it may have been fitted on."""
        return {c.dataset.pk for c in self.submitted.checks if c.trained_on} if self.submitted else set()

    @property
    def signature(self) -> str:
        """The current version's signature (scoring.signatures), "" before it has one."""
        version = self.metric.current_version
        if version is None:
            return ""
        version.metric = self.metric  # (the same row: no query of its own)
        return version_signature(version)

    @cached_property
    def result_signatures(self) -> dict[int, str]:
        """Per metric version of the correlations shown, its signature (a version column's tooltip)."""
        signatures = {}
        for result in self.results:
            version = result.metric_version
            if version.pk not in signatures:
                version.metric = self.metric
                signatures[version.pk] = version_signature(version)
        return signatures

    @property
    def config_text(self) -> str:
        version = self.metric.current_version
        return json.dumps(version.config, indent=2, sort_keys=True) if version else ""


def metric_page(*, metric: Metric, viewer, dataset_slug: str | None) -> MetricPage:
    datasets = list(
        Dataset.objects.visible_to(viewer)
        .filter(correlations__metric_version__metric=metric)
        .distinct()
        .order_by("title")
    )
    chosen = next((d for d in datasets if d.slug == dataset_slug), datasets[0] if datasets else None)
    page = MetricPage(metric, datasets, chosen, submitted=submitted_metric(metric=metric, viewer=viewer))
    page.is_owner = page.submitted is not None and viewer.pk == page.submitted.submission.owner_id
    if chosen is None:
        return page
    page.results, page.campaigns = metric_correlations(metric=metric, dataset=chosen)
    page.charts_shown = references_visible(chosen, viewer)  # a hidden test set's ratings: staff only
    if chosen.kind == Dataset.Kind.RATING and page.charts_shown:
        page.figures = _rating_figures(metric, chosen)
    elif chosen.kind != Dataset.Kind.RATING:  # pair accuracy by category: aggregates, for everyone
        categories = [
            (r.dimension, r.value, r.low, r.high)
            for r in page.results
            if r.statistic == "accuracy" and r.value is not None and r.protocol not in page.campaigns
        ]
        if categories:
            page.figures = {"categories": charts.category_bars(categories, metric.name)}
    return page


def _rating_figures(metric: Metric, dataset: Dataset) -> dict:
    """The scatter, heatmap and distribution on one dimension of the judgments (THumB's total, not
    its precision, recall and total mixed). Read from every score and judgment of the dataset
    (130,000 each on the largest): built once per change of the results (their revision moves when
    the scores behind them change), not per request (docs/performance.md)."""
    dimension = dataset.people_dimension
    version = metric_charted_version(metric=metric, dataset=dataset)

    def build() -> str:
        data = metric_on_dataset(metric=metric, dataset=dataset, dimension=dimension, version=version)
        if data is None or not len(data.metric):
            return "{}"
        return json.dumps(
            {
                "scatter": charts.scatter(data, dimension=dimension),
                "heatmap": charts.heatmap(data, dimension=dimension),
                "distribution": charts.distribution(data),
            }
        )

    kept, _ = kept_fragment(
        "metric-figures",
        metric_board_version().key,
        # The version read (its job is done after its results are written); a re-import moves updated_at.
        [metric.pk, version and version.pk, dataset.pk, dataset.updated_at.isoformat(), dimension, metric.points],
        build,
    )
    return json.loads(kept)
