"""Hiding a dataset's references: the commands (import --references-hidden, datasets references),
what may not be hidden, and what a hidden meta-evaluation set withholds beyond its pages: the
workbench's comparisons (an oracle on its ratings) and its systems' mean ratings."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from catalog.models import Dataset
from catalog.services.candidates import caption_keys
from workbench.selectors import scorable_datasets
from workbench.services import MetricInfo, MetricRefused, ScoresFile, metric_submit

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "datasets"
COCO = FIXTURES / "coco-captions" / "captions_val2014.json"


def _run(*args) -> str:
    out = io.StringIO()
    call_command("datasets", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_hidden_on_import_stays_hidden_on_reimport_until_made_public():
    assert "references hidden" in _run("import", "coco-captions", str(COCO), "--references-hidden")
    dataset = Dataset.objects.get(slug="coco-captions-val2014")
    assert dataset.references_hidden and dataset.is_benchmark
    _run("import", "coco-captions", str(COCO))  # the same content, no flag: never unhides
    dataset.refresh_from_db()
    assert dataset.references_hidden
    assert "references public" in _run("references", dataset.slug, "public")
    dataset.refresh_from_db()
    assert not dataset.references_hidden
    assert "already" in _run("references", dataset.slug, "public")
    assert "hidden (shown to staff only)" in _run("references", dataset.slug, "hidden")
    assert Dataset.objects.get(slug=dataset.slug).references_hidden


def test_a_foil_set_cannot_be_hidden():
    folder = FIXTURES / "foil"
    with pytest.raises(CommandError, match="FOIL set cannot be a hidden test set"):
        _run("import", "foil", str(folder / "foilv1.0_test_2017.json"), "--references-hidden")
    assert not Dataset.objects.filter(kind="foil").exists()
    _run("import", "foil", str(folder / "foilv1.0_test_2017.json"))
    slug = Dataset.objects.get(kind="foil").slug
    with pytest.raises(CommandError, match="pairs tell their outcome"):
        _run("references", slug, "hidden")
    with pytest.raises(CommandError, match="no dataset 'nothing-here'"):
        _run("references", "nothing-here", "hidden")


def test_a_hidden_meta_evaluation_set_takes_no_uploaded_scores_but_from_staff(demo_dataset, captioner, admin_user):
    Dataset.objects.filter(pk=demo_dataset.pk).update(references_hidden=True)
    demo_dataset.refresh_from_db()
    assert demo_dataset not in scorable_datasets(captioner)
    assert demo_dataset in scorable_datasets(admin_user)
    content = "\n".join(json.dumps({"caption_id": key, "score": 0.5}) for key in caption_keys(demo_dataset))
    with pytest.raises(MetricRefused, match="hidden test set"):
        metric_submit(
            owner=captioner,
            info=MetricInfo("Probe", ""),
            files=[ScoresFile(demo_dataset, "scores.jsonl", content.encode())],
        )


def test_a_hidden_sets_mean_ratings_leave_the_board(fresh_page_memory, client, demo_dataset, admin_user):
    board = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()
    assert board["people_dimension"] == "overall"
    assert "people" in board["systems"][0]
    Dataset.objects.filter(pk=demo_dataset.pk).update(references_hidden=True)
    hidden = client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()
    assert hidden["people_dimension"] is None
    assert all("people" not in row for row in hidden["systems"])
    page = client.get(f"/datasets/{demo_dataset.slug}/leaderboard/?download=csv").content.decode()
    assert "people_overall" not in page
    client.force_login(admin_user)
    assert "people" in client.get(f"/api/v1/leaderboards/{demo_dataset.slug}/").json()["systems"][0]
