"""The compare page as one model (ComparePage), and a comparison as the API gives it: the two
systems' numbers as the board shows them, the paired differences, and (the page) the images explored
one page at a time. A comparison not kept from an earlier request runs a bootstrap: those are counted
per address (settings.CAPBENCH_RATES["comparisons"]) by `comparison_for`."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import HttpResponse

from catalog.models import Dataset, System
from catalog.selectors import any_blind
from catalog.visibility import references_visible
from leaderboards.columns import Column
from leaderboards.comparison import (
    EXPLORER_ORDERS,
    Comparison,
    ExploredImage,
    MetricDifference,
    comparison,
    comparison_inputs,
    comparison_kept,
    explorable_columns,
    explored_images,
    explorer_metric,
    people_by_image,
)
from plumbing import limits
from scoring.shown import Shown


def comparison_for(request, dataset: Dataset, a: System, b: System) -> Comparison | HttpResponse:
    """The comparison of `a` and `b` (both visible to the caller: comparison.systems_for_comparison),
    kept from an earlier request or computed now, or a 429 when this address ran too many."""
    inputs = comparison_inputs(dataset, a, b)
    found = comparison_kept(inputs)
    if found is None:
        http = getattr(request, "_request", request)  # (a REST framework request wraps Django's)
        decision = limits.hit("comparisons", f"address:{limits.client_address(http)}")
        if not decision.allowed:
            return limits.too_many(http, decision, "comparisons")
        found = comparison(inputs)
    return found


def comparison_choices(dataset: Dataset, viewer) -> list[tuple[str, str]]:
    """The systems the compare form offers: those the board ranks that the viewer may see."""
    return list(
        System.objects.visible_to(viewer).ranked().filter(dataset=dataset).order_by("name").values_list("slug", "name")
    )


@dataclass
class ComparePage:
    dataset: Dataset
    choices: list[tuple[str, str]]
    a: str | None  # the slugs asked for
    b: str | None
    found: Comparison | None = None
    references_shown: bool = True
    order: str = EXPLORER_ORDERS[0]
    explorable: list[Column] = field(default_factory=list)
    explore_metric: Column | None = None
    images: list[ExploredImage] = field(default_factory=list)
    ranked: int = 0
    pages: int = 1
    page_number: int = 1
    rated_images: int = 0
    orders: tuple[str, ...] = EXPLORER_ORDERS
    blind: bool = False  # an open campaign rates a system's captions: no image-by-image explorer

    def default_pair(self) -> tuple[str | None, str | None]:
        """What the form offers before anything is asked: two different systems (never A = B)."""
        slugs = [slug for slug, _ in self.choices]
        return (slugs[0], slugs[1]) if len(slugs) >= 2 else (slugs[0] if slugs else None, None)


def compare_page(page: ComparePage, params, *, viewer) -> ComparePage:
    """The page's explorer over `page.found`: `?order=differ|people&metric=&page=` (an unknown
    order, metric or page falls back). A hidden test set (for all but staff): no references, no
    per-image ratings, only reference-free metrics per image; the differences are system-level."""
    found = page.found
    if found is None:
        return page
    for system in (found.a, found.b):  # a caption source the board does not rank can still be compared
        if system.slug not in {slug for slug, _ in page.choices}:
            page.choices.append((system.slug, system.name))
    # Blind annotation (catalog.visibility.caption_q): the explorer would show whose caption is whose.
    page.blind = any_blind(systems=[found.a, found.b], viewer=viewer)
    if page.blind:
        return page
    asked = params.get("order", "")
    page.order = asked if asked in EXPLORER_ORDERS else "differ"
    try:
        number = int(params.get("page", "1"))
    except ValueError:
        number = 1
    shown = references_visible(page.dataset, viewer)
    people = people_by_image(found) if shown else {}
    chosen = explorer_metric(found, params.get("metric"), reference_free_only=not shown)
    page.images, page.ranked, page.pages = explored_images(
        found, order=page.order, metric=chosen, page=number, people=people, reference_free_only=not shown
    )
    page.page_number = min(max(number, 1), page.pages)
    page.rated_images = len(people)
    page.references_shown = shown
    page.explore_metric = next((m.column for m in found.metrics if m.column.slug == chosen), None)
    page.explorable = explorable_columns(found, reference_free_only=not shown)
    return page


def comparison_json(found: Comparison) -> dict:
    """A comparison as the API gives it (docs/api.md): per metric each system's number as the board
    shows it and the paired difference a − b with its interval and p-value, native and in points."""
    return {
        "dataset": found.dataset.slug,
        "a": found.a.slug,
        "b": found.b.slug,
        "images": found.images,
        "metrics": [_metric_json(line) for line in found.metrics],
    }


def _metric_json(line: MetricDifference) -> dict:
    difference = line.difference_shown
    return {
        "metric": line.column.slug,
        "name": line.column.name,
        "higher_is_better": line.column.higher_is_better,
        "aggregation": line.column.aggregation,
        "a": _number(line.a),
        "b": _number(line.b),
        "difference": None
        if difference is None or line.difference is None
        else {
            **difference.json(),
            # Two-sided; with `replicates` draws a p below 2 / replicates reads 0 (the page: "< 0.002").
            "p": line.difference.p_value if line.difference.replicates else None,
            "replicates": line.difference.replicates,
            "images": line.difference.images,
            "better": line.better,
        },
        "reason": line.reason,
    }


def _number(shown: Shown | None) -> dict | None:
    return None if shown is None or shown.value is None else shown.json()
