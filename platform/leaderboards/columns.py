"""The boards' metric columns: one per registered metric (read by the snapshots and the selectors)."""

from __future__ import annotations

from dataclasses import dataclass

from scoring.models import Metric


@dataclass
class Column:
    slug: str
    name: str
    higher_is_better: bool
    family: str
    description: str
    citation: str
    reference_free: bool
    points: float = 100.0  # shown ×points (evaluation.metrics.base.Metric.points)
    available: bool = True  # the registry can compute it on this deployment

    @property
    def arrow(self) -> str:
        return "↑" if self.higher_is_better else "↓"

    @property
    def goodness(self) -> str:
        return "higher is better" if self.higher_is_better else "lower is better"


def metric_columns() -> list[Column]:
    return [
        Column(
            m.slug,
            m.name,
            m.higher_is_better,
            m.family,
            m.description,
            m.citation,
            "references" not in (m.needs or []),
            m.points,
            m.available,
        )
        for m in Metric.objects.filter(is_registered=True).order_by("family", "slug")
    ]
