"""The campaign form's address: made from the title when left empty (the page's script shows the
same slug as the title is typed), kept when given."""

from __future__ import annotations

import pytest

from campaigns.forms import CampaignForm
from catalog.models import System

pytestmark = pytest.mark.django_db


def cleaned_slug(**data) -> tuple[str | None, list[str]]:
    form = CampaignForm(data=data, systems=System.objects.none())
    form.is_valid()
    return form.cleaned_data.get("slug"), form.errors.get("slug", [])


def test_an_empty_slug_is_made_from_the_title():
    assert cleaned_slug(title="Winter ratings: Flickr8k, 2026!", slug="") == ("winter-ratings-flickr8k-2026", [])


def test_a_given_slug_is_kept_and_a_title_without_letters_asks_for_one():
    assert cleaned_slug(title="Winter ratings", slug="my-own")[0] == "my-own"
    slug, errors = cleaned_slug(title="!!!", slug="")
    assert slug is None
    assert errors == ["give the campaign an address: letters, digits, hyphens"]
