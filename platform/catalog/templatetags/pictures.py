"""`{% picture item.media alt %}`: a medium as catalog/pictures.py decides (stored file, else URL)."""

from __future__ import annotations

from django import template

from catalog.models import Media
from catalog.pictures import picture_of

register = template.Library()


@register.inclusion_tag("catalog/_picture.html")
def picture(media: Media | None, alt: str = "", css_class: str = "", loading: str = "lazy") -> dict:
    """`loading="eager"` for the page's own subject (an item's or a task's picture): a lazy picture
    below the fold of a phone is not fetched until scrolled to."""
    return {
        "picture": picture_of(media),
        "media": media,
        "alt": alt,
        "css_class": css_class,
        "loading": "eager" if loading == "eager" else "lazy",
    }
