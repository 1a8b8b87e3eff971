"""A README badge per system and metric of a captioner board: an SVG in the flat style of
shields.io, "CIDEr-D | 88.2 · #1 on Flickr8k-Expert", its right half coloured by rank.

The number and the rank are the board's (the same snapshot, visibility rule, sort, ranking and
rounding as the page): the number as the board's cell shows it (rendering.points), the rank among
the systems an anonymous visitor sees, sorted by that metric (captioner.captioner_board, ties share a
rank), with the system itself added when it is its owner's private one (its badge is theirs alone).
So a public system's badge depends on nothing hidden.

The SVG is text with every string XML-escaped (system names and dataset titles are users'), no
reference outside itself, a <title> and an aria-label. Its widths come from a table of Verdana's
advance widths at 11px, and each text is held to its computed width (textLength), so it fits
whatever font the viewer has."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.cache import get_conditional_response

from catalog.citations import absolute
from catalog.models import Dataset, System
from leaderboards.captioner import captioner_board
from leaderboards.rendering import points
from leaderboards.requests import systems_visible
from leaderboards.snapshots import board_payload
from scoring.models import Metric

NO_SCORE = "no score yet"
GREY = "#9f9f9f"
LABEL_COLOR = "#555"
TITLE_CHARS = 40  # a dataset title longer than this is cut (…) on the badge
PUBLIC_CACHE = "public, max-age=300"
PRIVATE_CACHE = "private, no-store"
POLICY = "default-src 'none'; style-src 'unsafe-inline'"

# Verdana's advance widths (1/2048 em) for printable ASCII; anything else is taken as an average
# letter, a wide East Asian character as a whole em.
_ASCII_WIDTHS = dict(
    zip(
        " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~",
        [720, 817, 918, 1831, 1423, 2429, 1621, 550, 1038, 1038, 1423, 1831, 825, 1038, 825, 1038]
        + [1423] * 10
        + [1038, 1038, 1831, 1831, 1831, 1219, 2246]
        + [1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 862, 1038, 1415, 1178, 1722]
        + [1540, 1616, 1237, 1616, 1430, 1401, 1255, 1511, 1401, 2025, 1405, 1253, 1405]
        + [1038, 1038, 1038, 1831, 1423, 1423]
        + [1229, 1276, 1067, 1276, 1220, 720, 1276, 1296, 562, 705, 1186, 562, 1992]
        + [1296, 1243, 1276, 1276, 874, 1067, 807, 1296, 1186, 1667, 1186, 1186, 1051]
        + [1300, 1038, 1300, 1831],
        strict=True,
    )
)
_OTHER_WIDTH = 1300
_FONT_SIZE = 11
_PADDING = 6  # px each side of a text
# Characters XML 1.0 does not allow (and C1 controls, which no name needs).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def text_width(text: str) -> float:
    """The width in px of `text` in Verdana 11px (approximately: a table of advance widths)."""
    units = 0
    for char in text:
        if char in _ASCII_WIDTHS:
            units += _ASCII_WIDTHS[char]
        elif unicodedata.combining(char):
            continue
        elif unicodedata.east_asian_width(char) in ("W", "F"):
            units += 2048
        else:
            units += _OTHER_WIDTH
    return units * _FONT_SIZE / 2048


def xml_text(text: str) -> str:
    """`text` for an XML attribute or element: characters XML may not hold dropped, white space as
    one space, & < > " ' escaped."""
    text = " ".join(_NOT_XML.sub("", text).split())
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def rank_color(rank: int | None) -> str:
    if rank is None:
        return GREY
    if rank == 1:
        return "#4c1"  # bright green
    if rank <= 3:
        return "#97ca00"  # green
    if rank <= 10:
        return "#a4a61d"  # yellow-green
    return "#007ec6"  # blue


def short(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class Badge:
    label: str  # the metric's name
    message: str  # "88.2 · #1 on Flickr8k-Expert", or NO_SCORE
    color: str
    title: str  # what it says, with the system's name (the SVG's <title>, its aria-label)
    value: str | None  # the number as the board shows it
    rank: int | None
    public: bool  # anyone may see it (then shared caches may keep it)

    @property
    def alt(self) -> str:
        """What the badge says, as alternative text: "CIDEr-D 88.2 · #1 on Flickr8k-Expert"."""
        return f"{self.label} {self.message}"


def anonymous_visible(dataset: Dataset) -> set[int]:
    """The dataset's systems an anonymous visitor sees (the rule's, read live)."""
    return systems_visible(dataset, AnonymousUser())


def board_badge(dataset: Dataset, system: System, metric: Metric, *, public_ids: set[int] | None = None) -> Badge:
    """`system`'s badge for `metric` on `dataset`'s board. The caller has checked the viewer may see
    all three (and that the board ranks the system); `public_ids`: anonymous_visible(dataset) when
    already read."""
    public_ids = anonymous_visible(dataset) if public_ids is None else public_ids
    public = system.pk in public_ids and Metric.objects.visible_to(None).filter(pk=metric.pk).exists()
    payload = board_payload(dataset)
    value, rank = None, None
    column = next((c for c in payload["columns"] if c["slug"] == metric.slug), None)
    if column is not None:
        _, rows = captioner_board(dataset, sort=metric.slug, visible=public_ids | {system.pk}, payload=payload)
        row = next((row for row in rows if row.system.id == system.pk), None)
        cell = row.cells.get(metric.slug) if row is not None else None
        if cell is not None and cell.state == "value" and cell.sortable and cell.value is not None:
            value, rank = points(cell.value, column["points"]), cell.rank
    label = metric.name
    if value is None:
        message = NO_SCORE
    elif rank is None:
        message = f"{value} on {short(dataset.title)}"
    else:
        message = f"{value} · #{rank} on {short(dataset.title)}"
    said = f"{label}: {NO_SCORE}" if value is None else f"{label} {value}" + (f", rank {rank}" if rank else "")
    title = f"{system.name} on {dataset.title}: {said}"
    return Badge(label, message, rank_color(rank) if value is not None else GREY, title, value, rank, public)


def badge_svg(badge: Badge) -> str:
    """The badge as an SVG document (flat style: two rectangles, rounded, a light gradient)."""
    label_w = round(text_width(badge.label) + 2 * _PADDING)
    message_w = round(text_width(badge.message) + 2 * _PADDING)
    width = label_w + message_w
    label, message, title = xml_text(badge.label), xml_text(badge.message), xml_text(badge.title)

    def texts(text: str, left: int, box: int) -> str:
        middle, length = left + box / 2, box - 2 * _PADDING
        return (
            f'<text aria-hidden="true" x="{middle:g}" y="15" fill="#010101" fill-opacity=".3" '
            f'textLength="{length}" lengthAdjust="spacingAndGlyphs">{text}</text>'
            f'<text x="{middle:g}" y="14" textLength="{length}" lengthAdjust="spacingAndGlyphs">{text}</text>'
        )

    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}">'
        f"<title>{title}</title>"
        '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
        '<stop offset="1" stop-opacity=".1"/></linearGradient>'
        f'<clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath>'
        f'<g clip-path="url(#r)"><rect width="{label_w}" height="20" fill="{LABEL_COLOR}"/>'
        f'<rect x="{label_w}" width="{message_w}" height="20" fill="{badge.color}"/>'
        f'<rect width="{width}" height="20" fill="url(#s)"/></g>'
        '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
        'text-rendering="geometricPrecision" font-size="11">'
        f"{texts(label, 0, label_w)}{texts(message, label_w, message_w)}</g></svg>"
    )


def badge_response(request: HttpRequest, badge: Badge) -> HttpResponse:
    """The SVG with its validator (304 when the client's copy is current), kept 5 minutes by anyone
    when public, by no one when not, and a policy that lets it load nothing."""
    svg = badge_svg(badge)
    cache = PUBLIC_CACHE if badge.public else PRIVATE_CACHE
    etag = '"{}"'.format(hashlib.sha256(f"{cache}\n{svg}".encode()).hexdigest()[:32])
    response = get_conditional_response(request, etag=etag) or HttpResponse(svg, content_type="image/svg+xml")
    response["ETag"] = etag
    response["Cache-Control"] = cache
    response["Content-Security-Policy"] = POLICY
    return response


def markdown_alt(text: str) -> str:
    """Text for Markdown's [...]: brackets and backslashes escaped, on one line."""
    return re.sub(r"([\\\[\]])", r"\\\1", " ".join(text.split()))


@dataclass(frozen=True)
class BadgeSnippet:
    badge: Badge
    image_path: str  # this site's path (the page's <img>)
    image_url: str  # absolute
    page_url: str  # absolute: the system's page
    any_metric_url: str  # absolute, with <metric slug> in place of the metric

    @property
    def markdown(self) -> str:
        return f"[![{markdown_alt(self.badge.alt)}]({self.image_url})]({self.page_url})"


def system_badge_snippet(dataset: Dataset, system: System) -> BadgeSnippet | None:
    """The headline metric's badge of a public system on the board, with the Markdown to embed it
    (absolute URLs under SITE_URL, as every citation's); None when the system is not public or the headline metric is
    not one the public sees."""
    public_ids = anonymous_visible(dataset)
    metric = Metric.objects.visible_to(None).filter(slug=dataset.headline_metric).first()
    if system.pk not in public_ids or metric is None:
        return None
    badge = board_badge(dataset, system, metric, public_ids=public_ids)
    page = reverse("leaderboards:system", args=[dataset.slug, system.slug])
    image = reverse("leaderboards:badge", args=[dataset.slug, system.slug, metric.slug])
    return BadgeSnippet(
        badge,
        image,
        absolute(image),
        absolute(page),
        absolute(page) + "badge/<metric slug>.svg",
    )
