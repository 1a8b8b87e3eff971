"""Catalog pages (thin: selectors do the reading)."""
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from catalog import selectors
from catalog.models import Dataset


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/home.html", {"datasets": selectors.dataset_list_public()})


def dataset_list(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/dataset_list.html", {"datasets": selectors.dataset_list_public()})


def dataset_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset, slug=slug, is_public=True)
    return render(request, "catalog/dataset_detail.html", {
        "dataset": dataset,
        "counts": selectors.dataset_counts(dataset=dataset),
        "items": selectors.dataset_items_sample(dataset=dataset),
        "last_import": dataset.imports.first(),
    })
