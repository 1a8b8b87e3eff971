"""The metrics index (/metrics/all/) and the metric board's "No numbers yet": every registered metric
with a working link, why one is unavailable in plain words (the server's own reason for staff only),
the cost of a judge per 1,000 captions, and the list of metrics without a number yet."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import resolve

from capbench_eval.metrics.judges.estimate import price_of
from catalog.models import Dataset
from leaderboards.index import BUILT_IN, NOT_SCORED_YET, metric_index, metrics_without_numbers
from scoring.models import Metric
from scoring.services.estimates import cost_per_thousand
from scoring.services.metrics import metrics_sync
from scoring.services.planning import dataset_plan
from scoring.wording import unavailable_words
from tests.platform.factories import UserFactory
from tests.platform.scoring.inline import run_jobs

pytestmark = pytest.mark.django_db(transaction=True)

# What the server says about an unavailable metric: a path, a setting and a command. Staff only.
SERVER_REASON = (
    "checkpoint /srv/capbench/models/polos/reprod.ckpt is missing: "
    "set CAPBENCH_MODEL_DIR or run `python -m capbench_eval models fetch polos`"
)
SERVER_WORDS = ("/srv/capbench", "CAPBENCH_MODEL_DIR", "python -m capbench_eval", "reprod.ckpt")


def override() -> None:
    """Polos unavailable with the server's own reason, whatever this machine holds."""
    Metric.objects.filter(slug="polos").update(available=False, unavailable_reason=SERVER_REASON)


@pytest.fixture
def metrics():
    metrics_sync()
    override()
    return {metric.slug: metric for metric in Metric.objects.filter(is_registered=True)}


def staff_client(client):
    client.force_login(UserFactory(username="staffer", is_staff=True))
    return client


def test_every_registered_metric_is_listed_with_a_working_link(client, metrics):
    assert resolve("/metrics/all/").url_name == "metric-index"  # not taken for a metric called "all"
    response = client.get("/metrics/all/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<h1>All metrics</h1>" in page
    assert "<caption>" in page
    assert 'scope="row"' in page
    assert 'href="/metrics/all/"' in page  # the site's navigation links it
    links = re.findall(r'<th scope="row"><a href="([^"]+)">', page)
    assert sorted(links) == sorted(f"/metrics/{slug}/" for slug in metrics)
    for link in links:
        assert client.get(link).status_code == 200, link
    rows = {row.slug: row for row in metric_index(None)}
    assert set(rows) == set(metrics)
    polos, bleu = rows["polos"], rows["bleu_4"]
    assert polos.kind == bleu.kind == BUILT_IN and polos.references and not rows["clip_s"].references
    assert bleu.version == metrics["bleu_4"].current_version.version
    assert bleu.version in page
    assert not polos.available and polos.availability == unavailable_words(["gpu", "media", "references"])
    # The view's own queryset (another visibility rule, user metrics) replaces the registered ones.
    assert [row.slug for row in metric_index(None, metrics=Metric.objects.filter(slug="bleu_4"))] == ["bleu_4"]


def test_why_a_metric_is_unavailable_plain_for_visitors_the_servers_reason_for_staff(client, metrics):
    page = client.get("/metrics/all/").content.decode()
    polos = re.search(r'<a href="/metrics/polos/">.*?</tr>', page, re.S).group(0)
    assert "not available on this server yet: its model is not installed" in polos
    clair = re.search(r'<a href="/metrics/clair/">.*?</tr>', page, re.S).group(0)
    if not metrics["clair"].available:
        assert "the language-model service it asks is not set up" in clair
    for words in SERVER_WORDS + ("staff",):
        assert words not in page, words
    for metric in metrics.values():
        if metric.unavailable_reason:
            assert html.escape(metric.unavailable_reason) not in page
    staff_page = staff_client(client).get("/metrics/all/").content.decode()
    assert html.escape(SERVER_REASON) in staff_page
    assert "staff-only" in staff_page
    assert metric_index(None)[0].staff_reason == ""  # the rows carry it for staff only


def test_the_metric_board_says_which_metrics_have_no_numbers_yet_and_why(
    fresh_page_memory, client, metrics, demo_dataset
):
    run_jobs(dataset_plan(dataset=demo_dataset, slugs=["bleu_4"]))
    override()  # planning synced the metrics again
    Metric.objects.filter(slug="rouge_l").update(available=True, unavailable_reason="")

    page = client.get("/metrics/").content.decode()
    assert 'href="/metrics/all/"' in page
    listed = re.search(r'<section aria-labelledby="without-numbers-title".*?</section>', page, re.S).group(0)
    assert "No numbers yet" in listed
    assert "BLEU-4" not in listed  # it has numbers on the demo
    assert f"ROUGE-L</a> — {NOT_SCORED_YET}" in listed
    assert "Polos</a> — not available on this server yet: its model is not installed" in listed
    assert [row.datasets for row in metric_index(None) if row.slug == "bleu_4"] == [1]
    # Staff read the same kept table: nothing staff-only in it.
    staff_page = staff_client(client).get("/metrics/").content.decode()
    for words in SERVER_WORDS:
        assert words not in staff_page, words
    client.logout()

    # What the list says is part of the table's version: a metric that becomes unavailable says so.
    Metric.objects.filter(slug="rouge_l").update(available=False, unavailable_reason="no Java here")
    listed = client.get("/metrics/").content.decode()
    assert "ROUGE-L</a> — not available on this server yet: a program it needs is not installed" in listed
    assert "no Java here" not in listed
    # The board's filters apply to the list too.
    assert [m.slug for m in metrics_without_numbers(family="ngram")] == sorted(
        (m.slug for m in metrics.values() if m.family == "ngram" and m.slug != "bleu_4"),
        key=lambda slug: (metrics[slug].name, slug),
    )
    assert all("references" not in metrics[m.slug].needs for m in metrics_without_numbers(reference="free"))

    # A private dataset's correlations are no public numbers.
    Dataset.objects.filter(pk=demo_dataset.pk).update(is_public=False)
    assert [row.datasets for row in metric_index(None) if row.slug == "bleu_4"] == [0]
    assert "bleu_4" in [m.slug for m in metrics_without_numbers()]


def test_a_judges_cost_per_thousand_captions_where_an_estimate_exists(client, metrics, monkeypatch):
    for name in ("CAPBENCH_JUDGE_PRICE_INPUT", "CAPBENCH_JUDGE_PRICE_OUTPUT", "CAPBENCH_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    cost = cost_per_thousand("clair")
    assert cost is not None and cost.model == "gpt-4o-2024-05-13"
    price = price_of(cost.model)
    assert price is not None
    assert cost.completion_tokens == 60
    assert 100 < cost.prompt_tokens < 1000
    assert cost.usd == pytest.approx(1000 * price.cost(cost.prompt_tokens, cost.completion_tokens))
    # Metrics that send nothing anywhere, judges on local models, a video judge: no estimate.
    assert cost_per_thousand("bleu_4") is None
    assert cost_per_thousand("fleur") is None
    assert cost_per_thousand("gveval_accr") is None
    assert cost_per_thousand("no_such_metric") is None
    page = client.get("/metrics/all/").content.decode()
    clair = re.search(r'<a href="/metrics/clair/">.*?</tr>', page, re.S).group(0)
    assert f"${cost.usd:.2f}" in clair
    assert cost.model in clair
    bleu = re.search(r'<a href="/metrics/bleu_4/">.*?</tr>', page, re.S).group(0)
    assert re.search(r'<td class="num">—</td>\s*</tr>', bleu)  # the last cell, the cost

    # A configured price replaces the list price; its setting's name is not shown.
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_INPUT", "1")
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_OUTPUT", "2")
    configured = cost_per_thousand("clair")
    assert configured is not None
    assert configured.usd == pytest.approx((configured.prompt_tokens + 2 * configured.completion_tokens) / 1000)
    page = client.get("/metrics/all/").content.decode()
    assert f"${configured.usd:.2f}" in page
    assert "CAPBENCH_JUDGE_PRICE" not in page
    monkeypatch.setenv("CAPBENCH_JUDGE_PRICE_INPUT", "cheap")
    assert cost_per_thousand("clair") is None  # a price that is no number: no estimate, no error page
    assert client.get("/metrics/all/").status_code == 200
