"""How to cite a metric: the "Cite" block on its page and its .bib download, from the registry's
citation for a built-in metric, from its name, owner and paper for a submitted one; a submitted
metric the viewer may not see has no .bib (404, as its page)."""

from __future__ import annotations

import html

import pytest

from leaderboards.citations import metric_bibtex
from scoring.models import Metric
from scoring.services.metrics import metrics_sync
from tests.platform.factories import UserFactory
from tests.platform.plumbing.bibcheck import parse_bib
from workbench.models import MetricSubmission

pytestmark = pytest.mark.django_db


@pytest.fixture
def synced():
    metrics_sync()


def _submitted(owner, *, slug="my_metric", public=True, paper_url="", citation="") -> Metric:
    metric = Metric.objects.create(
        slug=slug, name="My <Metric> & co", family="submitted", is_registered=False, citation=citation
    )
    MetricSubmission.objects.create(owner=owner, metric=metric, paper_url=paper_url, is_public=public)
    return metric


def test_a_built_in_metric_page_shows_its_bibtex_and_the_download_gives_the_same(client, synced):
    text = metric_bibtex(Metric.objects.get(slug="bleu_4"))
    [(kind, key, fields)] = parse_bib(text)
    assert (kind, key, fields["year"]) == ("inproceedings", "papineni2002bleu", "2002")
    assert fields["author"].split(" and ")[0] == "K. Papineni"
    assert len(fields["author"].split(" and ")) == 4
    page = client.get("/metrics/bleu_4/").content.decode()
    assert html.escape(text) in page
    assert 'href="/metrics/bleu_4/cite.bib"' in page
    response = client.get("/metrics/bleu_4/cite.bib")
    assert response["Content-Type"] == "application/x-bibtex; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="bleu_4.bib"'
    assert response.content.decode() == text


def test_a_metric_whose_citation_does_not_parse_links_its_page(synced, settings):
    settings.SITE_URL = "https://capbench.example"
    [(kind, key, fields)] = parse_bib(metric_bibtex(Metric.objects.get(slug="fleur")))
    assert (kind, key, fields["title"]) == ("misc", "capbench-fleur", "{FLEUR}")
    assert fields["note"].startswith("FLEUR: An Explainable")
    assert fields["url"] == "https://capbench.example/metrics/fleur/"


def test_a_submitted_metric_without_citation(client, captioner, settings):
    settings.SITE_URL = "https://capbench.example"
    metric = _submitted(captioner)
    [(kind, key, fields)] = parse_bib(client.get("/metrics/my_metric/cite.bib").content.decode())
    assert (kind, key, fields["author"]) == ("misc", "capbench-my_metric", "{captioner}")
    assert fields["title"] == r"My <Metric> \& co"
    assert fields["note"] == "submitted to CapBench"
    assert fields["url"] == "https://capbench.example/metrics/my_metric/"
    assert fields["year"] == str(metric.submission.created_at.year)
    MetricSubmission.objects.filter(metric=metric).update(paper_url="https://example.org/paper")
    [(_, _, fields)] = parse_bib(client.get("/metrics/my_metric/cite.bib").content.decode())
    assert fields["url"] == "https://example.org/paper"


def test_a_private_submitted_metric_has_no_bib_but_for_its_owner(client, captioner, django_user_model):
    _submitted(captioner, public=False)
    assert client.get("/metrics/my_metric/cite.bib").status_code == 404
    client.force_login(UserFactory(username="stranger"))
    assert client.get("/metrics/my_metric/cite.bib").status_code == 404
    client.force_login(captioner)
    assert client.get("/metrics/my_metric/cite.bib").status_code == 200
    MetricSubmission.objects.filter(metric__slug="my_metric").update(is_public=True, status="withdrawn")
    client.logout()
    assert client.get("/metrics/my_metric/cite.bib").status_code == 404
