"""The boards' metric columns: one per registered metric (read by the snapshots and the selectors);
the metric board adds the submitted metrics a viewer may see."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from scoring.models import Metric
from scoring.signatures import version_signature
from workbench.models import MetricSubmission


@dataclass
class Column:
    slug: str
    name: str
    higher_is_better: bool
    family: str
    description: str
    citation: str
    reference_free: bool
    points: float = 100.0  # shown ×points (capbench_eval.metrics.base.Metric.points)
    aggregation: str = "mean"  # how a system's number is formed: "mean" or "corpus" (Metric.aggregation)
    available: bool = True  # the registry can compute it on this deployment
    submitted_by: str = ""  # a submitted metric's owner (its scores were uploaded, not computed here)
    paper_url: str = ""
    code_url: str = ""
    private: bool = False  # a submitted metric the public does not see (unpublished or withdrawn)
    trained_on: tuple[int, ...] = ()  # dataset ids it may have been fitted on
    signature: str = ""  # its current version's (scoring.signatures); "" before it has one

    @property
    def arrow(self) -> str:
        return "↑" if self.higher_is_better else "↓"

    @property
    def goodness(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"

    @property
    def formed(self) -> str:
        """How a system's number is formed from its captions' scores, in a few words."""
        return "corpus statistic of summed counts" if self.aggregation == "corpus" else "mean of per-caption scores"


def metric_columns() -> list[Column]:
    found = Metric.objects.filter(is_registered=True).select_related("current_version").order_by("family", "slug")
    return [_column(m) for m in found]


def metric_board_columns(*, extra: Iterable[str] = ()) -> list[Column]:
    """The registry's metrics and the public submitted ones, with the submitted metrics named in
    `extra` (those only this viewer may see: `workbench.selectors.private_metric_slugs`)."""
    shown = Metric.objects.listed().visible_to(None) | Metric.objects.filter(slug__in=list(extra))
    submissions = {
        s.metric_id: s
        for s in MetricSubmission.objects.filter(metric__in=shown)
        .select_related("owner")
        .prefetch_related("trained_on")
    }
    found = shown.distinct().select_related("current_version").order_by("family", "slug")
    return [_column(m, submissions.get(m.pk)) for m in found]


def _column(m: Metric, submission: MetricSubmission | None = None) -> Column:
    column = Column(
        m.slug,
        m.name,
        m.higher_is_better,
        m.family,
        m.description,
        m.citation,
        "references" not in (m.needs or []),
        m.points,
        m.aggregation,
        m.available,
    )
    if m.current_version is not None:
        m.current_version.metric = m  # (its signature reads the metric: no query of its own)
        column.signature = version_signature(m.current_version)
    if submission is not None:
        column.submitted_by = submission.owner.username
        column.paper_url, column.code_url = submission.paper_url, submission.code_url
        column.private = not submission.is_public or submission.is_withdrawn
        column.trained_on = tuple(sorted(d.pk for d in submission.trained_on.all()))
    return column
