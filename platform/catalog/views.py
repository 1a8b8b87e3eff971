"""Catalog pages (thin: selectors do the reading)."""

import io

from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_safe

from catalog import selectors
from catalog.citations import bib_response, capbench_bibtex, dataset_bibtex
from catalog.importers import canonical
from catalog.models import Dataset, Media, blinded_system_ids
from catalog.services import candidates
from catalog.services.exports import dataset_bundle
from catalog.visibility import is_staff, references_visible
from plumbing import storage


def dataset_list(request: HttpRequest) -> HttpResponse:
    return render(request, "catalog/dataset_list.html", selectors.datasets_by_purpose(viewer=request.user))


def dataset_detail(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    return render(
        request,
        "catalog/dataset_detail.html",
        {
            "dataset": dataset,
            "counts": selectors.dataset_counts(dataset=dataset, viewer=request.user),
            "items": selectors.dataset_items_sample(dataset=dataset, viewer=request.user),
            "last_import": dataset.imports.first(),
            "meta_evaluation": candidates.is_meta_evaluation(dataset),
            "references_shown": references_visible(dataset, request.user),
            "bibtex": dataset_bibtex(dataset),
            "protocols": [] if dataset.is_benchmark else selectors.dataset_protocol_facts(dataset=dataset),
        },
    )


@require_safe
def dataset_cite_bib(request: HttpRequest, slug: str) -> HttpResponse:
    """The dataset's citation as a .bib file (404 where its page is)."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    return bib_response(dataset_bibtex(dataset), dataset.slug)


@require_safe
def cite(request: HttpRequest) -> HttpResponse:
    """How to cite CapBench (and where its datasets' and metrics' citations are)."""
    return render(request, "catalog/cite.html", {"bibtex": capbench_bibtex()})


@require_safe
def cite_bib(request: HttpRequest) -> HttpResponse:
    return bib_response(capbench_bibtex(), "capbench")


def item_browser(request: HttpRequest, slug: str) -> HttpResponse:
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    query = request.GET.get("q", "").strip()
    page = Paginator(selectors.dataset_items_page(dataset=dataset, query=query, viewer=request.user), 20).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "catalog/item_browser.html",
        {
            "dataset": dataset,
            "page": page,
            "query": query,
            "references_shown": references_visible(dataset, request.user),
            "blind_systems": selectors.blind_systems(dataset=dataset, viewer=request.user),
        },
    )


def dataset_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The dataset's own content in the canonical JSONL format (what `datasets export` writes):
    submissions are not part of it (each public one has its own page and downloads). A hidden test
    set's copy withholds its references and judgments from all but staff, and while a campaign is
    open its systems' captions are left out for all but staff (blind annotation)."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    stream = io.StringIO()
    withhold = not references_visible(dataset, request.user)
    # An open campaign's systems' captions are blind (catalog.visibility.caption_q), the dataset's own too.
    blind = [] if is_staff(request.user) else blinded_system_ids(request.user)
    canonical.write(dataset_bundle(dataset=dataset, withhold_references=withhold, blind=blind), stream)
    response = HttpResponse(stream.getvalue(), content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}.jsonl"'
    return response


def dataset_candidates(request: HttpRequest, slug: str, format: str) -> StreamingHttpResponse:
    """A meta-evaluation dataset's candidates to score offline (docs/datasets.md §5); 404 for a
    dataset without human judgments."""
    dataset = get_object_or_404(Dataset.objects.visible_to(request.user), slug=slug)
    return candidates_response(dataset, format)


def candidates_response(dataset: Dataset, format: str) -> StreamingHttpResponse:
    """The download of `dataset`'s candidates in `format` (this page's and the API's)."""
    if not candidates.is_meta_evaluation(dataset):
        raise Http404(f"{dataset.slug} is not a meta-evaluation dataset: it has no candidates to score")
    response = StreamingHttpResponse(
        candidates.candidate_lines(dataset, format), content_type=candidates.CONTENT_TYPES[format]
    )
    response["Content-Disposition"] = f'attachment; filename="{dataset.slug}-candidates.{format}"'
    return response


def media_file(request: HttpRequest, pk: int) -> FileResponse:
    """An attached image or video, looked up by id (never by a path from the request)."""
    media = get_object_or_404(Media, pk=pk, dataset__in=Dataset.objects.visible_to(request.user))
    if not media.stored_path:
        raise Http404("this file is declared but not attached")
    try:
        return FileResponse(storage.open_stored(media.stored_path), filename=media.name)
    except FileNotFoundError:
        raise Http404("this file is missing from the file store") from None
