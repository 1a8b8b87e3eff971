"""Human labels for the store's keys (scoring/labels.py), for templates after `{% load labels %}`:
`protocol_label` (Flickr8k-Expert · canonical protocol (v1)), `family_label` (Word overlap (n-grams,
METEOR)), `statistic_label` (Kendall τ-c), `metric_label` (BLEU-1: a built-in metric's name; other
slugs as they are)."""

from __future__ import annotations

from django import template

from scoring import labels
from scoring.models import Metric

register = template.Library()

_names: dict[str, str] = {}


register.filter("family_label", labels.family_label)
register.filter("protocol_label", labels.protocol_label)
register.filter("protocol_name_label", labels.protocol_name_label)
register.filter("statistic_label", labels.statistic_label)


@register.filter
def metric_label(slug: str) -> str:
    """A built-in metric's name from its slug ("bleu_1" -> "BLEU-1"); any other slug as it is. Only
    built-in names are kept per process: a submitted metric's name may be taken back (made private,
    withdrawn), and the pages that may show it read it with the visibility rule."""
    if slug not in _names:
        found = Metric.objects.filter(is_registered=True, slug=slug).values_list("name", flat=True).first()
        if found is None:
            return slug
        _names[slug] = found
    return _names[slug]
