"""A metric's citation in BibTeX: the registry's metrics from their citation text (plumbing.bibtex
parses it), a submitted metric from its own citation when it has one, else from its name, owner
and paper (or its page here)."""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse

from catalog.citations import absolute
from plumbing import bibtex
from scoring.models import Metric


def metric_bibtex(metric: Metric) -> str:
    page = absolute(reverse("leaderboards:metric-detail", args=[metric.slug]))
    try:
        submission = metric.submission  # workbench's MetricSubmission (a one-to-one's reverse)
    except ObjectDoesNotExist:
        submission = None
    if submission is None:
        # A registry metric: its paper's entry, with no URL (none is known but the paper's own,
        # which an arXiv work gets); text that does not parse, or none: an entry linking its page here.
        parsed = bool(metric.citation.strip()) and bibtex.parse(metric.citation) is not None
        entries = bibtex.citation_entries(
            metric.citation,
            title=metric.name,
            slug=metric.slug,
            url="" if parsed else page,
            note="a metric on CapBench",
        )
        return bibtex.render(entries)
    url = submission.paper_url or page
    if metric.citation.strip():
        return bibtex.render(bibtex.citation_entries(metric.citation, title=metric.name, slug=metric.slug, url=url))
    entry = bibtex.submitted_entry(
        name=metric.name,
        owner=submission.owner.username,
        slug=metric.slug,
        url=url,
        year=submission.created_at.year,
    )
    return bibtex.render([entry])
