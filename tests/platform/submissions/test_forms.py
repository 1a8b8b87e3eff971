"""The upload form's dataset choice: titles, not slugs, and a dataset chosen from the start (the
only one, the first, or the one the page was opened for), never "---------"."""

from __future__ import annotations

import re

import pytest

from catalog.models import Dataset
from submissions.forms import SubmissionForm

pytestmark = pytest.mark.django_db


def dataset(slug: str, title: str, **fields) -> Dataset:
    return Dataset.objects.create(slug=slug, title=title, source_format="flickr8k-expert", **fields)


def options(html: str) -> list[tuple[str, str, bool]]:
    """(value, label, selected) of each option of a rendered <select>."""
    found = re.findall(r'<option value="([^"]*)"( selected)?>([^<]*)</option>', html)
    return [(value, label, bool(selected)) for value, selected, label in found]


def test_the_only_dataset_is_chosen_and_shown_by_its_title(client, captioner):
    dataset("flickr8k-expert-demo", "Flickr8k-Expert (demo slice: 100 images)")
    client.force_login(captioner)
    page = client.get("/submit/").content.decode()
    select = re.search(r'<select name="dataset".*?</select>', page, re.S)
    assert select, page
    assert options(select.group(0)) == [("flickr8k-expert-demo", "Flickr8k-Expert (demo slice: 100 images)", True)]
    assert "---------" not in select.group(0)


def test_the_dataset_asked_for_is_chosen_and_a_hidden_one_is_not_offered(client, captioner):
    dataset("b-set", "Alpha set")
    dataset("a-set", "Beta set")
    dataset("secret", "Hidden set", is_public=False)
    client.force_login(captioner)
    first = options(re.search(r'<select name="dataset".*?</select>', client.get("/submit/").content.decode(), re.S)[0])
    assert [label for _, label, _ in first] == ["Alpha set", "Beta set"]  # by title; the browser selects the first
    asked = client.get("/submit/?dataset=a-set").content.decode()
    assert options(re.search(r'<select name="dataset".*?</select>', asked, re.S)[0]) == [
        ("b-set", "Alpha set", False),
        ("a-set", "Beta set", True),
    ]
    hidden = client.get("/submit/?dataset=secret")
    assert hidden.status_code == 200
    assert b"Hidden set" not in hidden.content


def test_a_posted_slug_still_names_the_dataset():
    chosen = dataset("a-set", "Beta set")
    form = SubmissionForm(data={"dataset": "a-set", "method_name": "m"})
    form.is_valid()
    assert form.cleaned_data["dataset"] == chosen
