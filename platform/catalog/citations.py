"""How to cite CapBench and its datasets in BibTeX (plumbing.bibtex builds the entries), and the
.bib download every citation page offers. Links start with SITE_URL, never a request's Host: a
citation names the site's own address, the same on every copy."""

from __future__ import annotations

import importlib.metadata
from datetime import date

from django.conf import settings
from django.http import HttpResponse
from django.urls import reverse
from django.utils import timezone

from catalog.models import Dataset
from plumbing import bibtex

CONTENT_TYPE = "application/x-bibtex; charset=utf-8"


def absolute(path: str) -> str:
    """A path of this site as an absolute URL (SITE_URL + path)."""
    return settings.SITE_URL + path


def capbench_version() -> str:
    try:
        return importlib.metadata.version("capbench")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def capbench_bibtex(*, today: date | None = None) -> str:
    """CapBench's own entry: the site's root, this deployment's version, read today."""
    entry = bibtex.capbench_entry(url=absolute("/"), version=capbench_version(), accessed=today or timezone.localdate())
    return bibtex.render([entry])


def dataset_bibtex(dataset: Dataset) -> str:
    """The dataset's citation as BibTeX (one entry per work it cites), its source's URL (else its
    page here) on the first."""
    url = dataset.url or absolute(reverse("catalog:dataset-detail", args=[dataset.slug]))
    return bibtex.render(
        bibtex.citation_entries(
            dataset.citation, title=dataset.title, slug=dataset.slug, url=url, note="a dataset on CapBench"
        )
    )


def bib_response(text: str, name: str) -> HttpResponse:
    """A .bib download named `name`.bib (a slug, or "capbench")."""
    response = HttpResponse(text, content_type=CONTENT_TYPE)
    response["Content-Disposition"] = f'attachment; filename="{name}.bib"'
    return response
