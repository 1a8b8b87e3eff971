"""One item as a metric researcher reads it: the picture, the references, every candidate with its
human judgments and its scores under the current metric versions (in the metrics' points, as the
boards show numbers), and what the metrics wrote about
it (a judge's reasoning and score distribution, VisCE²'s visual context of the image)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.core.paginator import Page, Paginator
from django.db.models import F, Prefetch

from catalog.models import Caption, Item, Judgment
from catalog.selectors import blind_systems
from catalog.visibility import references_visible
from scoring.models import Metric, Score

# Detail keys shown as their own parts of a reading rather than in the raw detail.
REASONING, PICTURE, HOISTED = "reply", "generated_image", {"visual_context", "generated_image"}


@dataclass
class Reading:
    slug: str
    name: str
    value: float | None
    error: str
    reasoning: str = ""
    detail_text: str = ""
    generated_image: str = ""  # the key of the picture a cycle metric generated from the caption
    phrases: list = field(default_factory=list)  # HICE-S: each phrase's correctness
    regions: list = field(default_factory=list)  # HICE-S: each region's completeness and box
    scale: float = 1.0  # the metric's points: the page shows the value ×scale, as the boards do

    @property
    def wrote(self) -> bool:
        """Whether the metric left anything to read beyond its number."""
        return bool(self.error or self.reasoning or self.detail_text or self.generated_image or self.phrases)


@dataclass
class Candidate:
    caption: Caption
    judgments: list[Judgment]
    readings: list[Reading] = field(default_factory=list)
    cells: list[Reading | None] = field(default_factory=list)  # one per column of the page's score table

    @property
    def written(self) -> list[Reading]:
        return [reading for reading in self.readings if reading.wrote]


@dataclass
class ItemPage:
    item: Item
    candidates: list[Candidate]
    visual_context: str = ""  # VisCE² step 1 for this image (the same for every candidate)
    visual_context_model: str = ""
    columns: list[tuple[str, str]] = field(default_factory=list)  # (slug, name) of every metric with a score
    references_shown: bool = False  # True unless a hidden test set and the viewer is not staff (catalog.visibility)
    pager: Page | None = None  # the candidates are shown CANDIDATES_PER_PAGE at a time
    blind_systems: int = 0  # systems whose captions an open campaign rates: not listed (catalog.visibility)

    @property
    def written(self) -> bool:
        return any(candidate.written for candidate in self.candidates)


# Every system's caption of the image with all its metrics' readings: at 80 systems a page of all
# of them was 1.1 MB of HTML and most of a second to render (docs/performance.md, bench/scale.py).
CANDIDATES_PER_PAGE = 20


def item_page(*, item: Item, viewer=None, number=1) -> ItemPage:
    """The item as `viewer` may read it: on a hidden test set (for all but staff) without its
    references, judgments and reference-based metrics' scores (catalog.visibility). Page `number`
    of its candidates (CANDIDATES_PER_PAGE each; an unknown number gives the first or last)."""
    readable = references_visible(item.dataset, viewer)
    judgments = Judgment.objects.all() if readable else Judgment.objects.none()
    captions = (
        Caption.objects.listed_to(viewer)  # an open campaign's captions are blind (catalog.visibility)
        .filter(item=item)
        .select_related("system")
        .prefetch_related(Prefetch("judgments", queryset=judgments.order_by("dimension", "id")))
        .order_by("system__name", "id")
    )
    pager = Paginator(captions, CANDIDATES_PER_PAGE).get_page(number)
    candidates = {caption.pk: Candidate(caption, list(caption.judgments.all())) for caption in pager.object_list}
    page = ItemPage(item, list(candidates.values()), references_shown=readable, pager=pager)
    page.blind_systems = blind_systems(dataset=item.dataset, viewer=viewer)
    scores = (
        Score.objects.visible_to(viewer)
        .filter(caption__in=list(candidates), metric_version=F("metric_version__metric__current_version"))
        .filter(metric_version__metric__in=Metric.objects.visible_to(viewer))
        .select_related("metric_version__metric")
        .order_by("metric_version__metric__slug")
    )
    for score in scores:
        detail = dict(score.detail or {})
        context = detail.pop("visual_context", "")
        if context and not page.visual_context:
            page.visual_context, page.visual_context_model = context, detail.get("model", "")
        reasoning = detail.pop(REASONING, "")
        phrases, regions = detail.pop("phrases", []), detail.pop("regions", [])
        shown = {key: value for key, value in detail.items() if key not in HOISTED and key != "error"}
        metric = score.metric_version.metric
        candidates[score.caption_id].readings.append(
            Reading(
                metric.slug,
                metric.name,
                score.value,
                score.error,
                reasoning,
                json.dumps(shown, indent=1, ensure_ascii=False, sort_keys=True) if shown else "",
                detail.get(PICTURE, ""),
                phrases,
                regions,
                metric.points,
            )
        )
    page.columns = sorted({(r.slug, r.name) for c in page.candidates for r in c.readings}, key=lambda c: c[1].lower())
    for candidate in page.candidates:
        by_slug = {reading.slug: reading for reading in candidate.readings}
        candidate.cells = [by_slug.get(slug) for slug, _ in page.columns]
    return page
