"""How to cite a dataset and CapBench: the "Cite" block on the dataset page, the .bib downloads, the
/cite/ page linked from every page's footer, and the 404 a dataset the viewer may not see gives."""

from __future__ import annotations

import html

import pytest

from catalog.citations import capbench_bibtex, dataset_bibtex
from catalog.models import Dataset
from tests.platform.plumbing.bibcheck import parse_bib

pytestmark = pytest.mark.django_db


def test_the_dataset_page_shows_its_bibtex_and_the_download_gives_the_same(client, demo_dataset):
    text = dataset_bibtex(demo_dataset)
    page = client.get(f"/datasets/{demo_dataset.slug}/").content.decode()
    assert '<pre class="bibtex"><code>' in page
    assert html.escape(text) in page
    assert f'href="/datasets/{demo_dataset.slug}/cite.bib"' in page
    response = client.get(f"/datasets/{demo_dataset.slug}/cite.bib")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-bibtex; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{demo_dataset.slug}.bib"'
    assert response.content.decode() == text
    entries = parse_bib(text)
    assert entries[0][2]["year"] == "2013"
    assert entries[0][2]["author"].startswith("M. Hodosh and")
    assert entries[0][2]["url"]  # its source's address, else its page here


def test_a_dataset_without_a_parsable_citation_keeps_its_words(client, demo_dataset):
    Dataset.objects.filter(pk=demo_dataset.pk).update(citation="Our lab & friends, 2024 <b>draft</b>", url="")
    text = client.get(f"/datasets/{demo_dataset.slug}/cite.bib").content.decode()
    [(kind, key, fields)] = parse_bib(text)
    assert (kind, key) == ("misc", f"capbench-{demo_dataset.slug}")
    assert fields["note"] == r"Our lab \& friends, 2024 <b>draft</b>"
    assert fields["url"].endswith(f"/datasets/{demo_dataset.slug}/")
    page = client.get(f"/datasets/{demo_dataset.slug}/").content.decode()
    assert "<b>draft</b>" not in page
    assert "&lt;b&gt;draft&lt;/b&gt;" in page


def test_a_dataset_the_viewer_may_not_see_has_no_bib(client, demo_dataset):
    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    assert client.get(f"/datasets/{demo_dataset.slug}/cite.bib").status_code == 404
    assert client.get("/datasets/no-such-dataset/cite.bib").status_code == 404


def test_capbench_has_a_cite_page_linked_from_the_footer_and_a_bib(fresh_page_memory, client, settings):
    settings.SITE_URL = "https://capbench.example"
    home = client.get("/").content.decode()
    assert '<a href="/cite/">Cite CapBench</a>' in home
    page = client.get("/cite/").content.decode()
    text = capbench_bibtex()
    assert html.escape(text) in page
    assert 'href="/cite.bib"' in page
    assert "<script>" not in page  # no inline script (the CSP refuses it)
    response = client.get("/cite.bib")
    assert response["Content-Type"] == "application/x-bibtex; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="capbench.bib"'
    [(kind, key, fields)] = parse_bib(response.content.decode())
    assert (kind, key, fields["author"]) == ("misc", "capbench", "{CapBench contributors}")
    assert fields["url"] == "https://capbench.example/"
    assert fields["howpublished"] == r"\url{https://capbench.example/}"
    assert fields["note"].startswith("version ")
    assert ", accessed 20" in fields["note"]
