"""A captioner board over one subset of the images (nocaps' domains): every number computed again
from the per-caption scores of that subset's items, with an interval, on the page and the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.importers.registry import read_bundle
from catalog.models import Caption, Dataset, Item
from catalog.selectors import HIDDEN_SUBSET_MIN_ITEMS, item_subsets
from catalog.services.imports import dataset_import
from leaderboards.snapshots import board_refresh
from scoring.models import EvaluationJob, Metric, Score
from scoring.services.metrics import metrics_sync
from scoring.services.numbers import system_number_store
from submissions.services import MethodInfo, submission_create

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_page_memory")]

NOCAPS = Path(__file__).resolve().parents[2] / "fixtures" / "datasets" / "nocaps" / "nocaps_val_4500_captions.json"


@pytest.fixture
def nocaps(captioner, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    metrics_sync()
    dataset = dataset_import(bundle=read_bundle("nocaps", NOCAPS), source_path="test").dataset
    results = [
        {"image_id": int(i.external_id), "caption": f"a thing {i.pk}"} for i in Item.objects.filter(dataset=dataset)
    ]
    submission = submission_create(
        owner=captioner,
        dataset=dataset,
        file_name="results.json",
        content=json.dumps(results).encode(),
        method=MethodInfo("domain captioner", "", "", ""),
        is_public=True,
    )
    version = Metric.objects.get(slug="cider_d").current_version
    EvaluationJob.objects.create(
        purpose="submission", dataset=dataset, system=submission.system, metric_version=version, status="done"
    )
    captions = list(Caption.objects.filter(system=submission.system).select_related("item"))
    values = {caption.pk: 0.1 * (n + 1) for n, caption in enumerate(captions)}  # 0.1 … 0.6
    Score.objects.bulk_create(
        Score(caption=c, metric_version=version, value=values[c.pk], input_key=f"k{c.pk}".encode()) for c in captions
    )
    everything = sum(values.values()) / len(values)
    system_number_store(system_id=submission.system_id, version=version)  # as a finished job computes it
    board_refresh(dataset_id=dataset.pk)
    by_domain: dict[str, list[float]] = {}
    for caption in captions:
        by_domain.setdefault(caption.item.metadata["domain"], []).append(values[caption.pk])
    return dataset, submission, {domain: sum(v) / len(v) for domain, v in by_domain.items()}, everything


def test_the_board_of_one_domain_averages_that_domains_captions_again(client, nocaps):
    dataset, submission, means, everything = nocaps
    assert item_subsets(dataset) == ["in-domain", "near-domain", "out-domain"]
    whole = client.get(f"/api/v1/leaderboards/{dataset.slug}/").json()
    assert whole["domain"] is None
    whole_cell = whole["systems"][0]["scores"]["cider_d"]
    assert whole_cell["value"] == pytest.approx(everything)
    assert whole_cell["points"] == pytest.approx(100 * everything)
    assert whole_cell["low"] < everything < whole_cell["high"]
    for domain, mean in means.items():
        board = client.get(f"/api/v1/leaderboards/{dataset.slug}/?domain={domain}").json()
        cell = board["systems"][0]["scores"]["cider_d"]
        assert board["domain"] == domain
        assert cell["value"] == pytest.approx(mean)
        assert cell["points"] == pytest.approx(100 * mean)
        if domain != "out-domain":  # (one image: no interval)
            assert cell["low"] <= mean <= cell["high"]
            assert cell["low"] < cell["high"]
            assert cell["low_points"] == pytest.approx(100 * cell["low"])
        else:
            assert cell["low"] is None
            assert cell["low_points"] is None
    page = client.get(f"/datasets/{dataset.slug}/leaderboard/?domain=near-domain").content.decode()
    assert "over the <strong>near-domain</strong> images only" in page
    assert f"{means['near-domain'] * 100:.1f}" in page
    assert 'name="domain"' in page
    assert "domain=near-domain&amp;sort=cider_d" in page  # sorting keeps the domain
    # An unknown domain is no filter (and no new page to keep)
    other = client.get(f"/datasets/{dataset.slug}/leaderboard/?domain=elsewhere").content.decode()
    assert "images only" not in other
    assert f"{everything * 100:.1f}" in other
    csv = client.get(f"/datasets/{dataset.slug}/leaderboard/?download=csv&domain=out-domain")
    assert "nocaps-val-out-domain-leaderboard.csv" in csv["Content-Disposition"]


def test_a_hidden_test_set_offers_no_subset_smaller_than_the_minimum(client, nocaps):
    dataset, *_ = nocaps
    Dataset.objects.filter(pk=dataset.pk).update(references_hidden=True)
    dataset.refresh_from_db()
    sizes = {d: Item.objects.filter(dataset=dataset, metadata__domain=d).count() for d in ("in-domain", "near-domain")}
    assert max(sizes.values()) < HIDDEN_SUBSET_MIN_ITEMS  # every domain of the fixture is smaller
    assert item_subsets(dataset) == []
    board = client.get(f"/api/v1/leaderboards/{dataset.slug}/?domain=near-domain").json()
    assert board["domain"] is None
