"""Campaign fixtures: two public submissions on the demo dataset (each its own owner), staff, and a
campaign made through the real service."""

from __future__ import annotations

import json

import pytest

from campaigns.models import Campaign
from campaigns.services.creation import CampaignSpec, campaign_create
from catalog.models import Item
from submissions.services import MethodInfo, submission_create
from tests.platform.campaigns.helpers import PASSWORD


def submit(owner, dataset, name: str, caption=None, *, is_public: bool = True):
    """A submission through the real service: one caption per image of the dataset."""
    caption = caption or (lambda item: f"{name} says item {item.external_id} shows something")
    entries = [
        {"image_id": item.external_id, "caption": caption(item)}
        for item in Item.objects.filter(dataset=dataset).order_by("id")
    ]
    return submission_create(
        owner=owner,
        dataset=dataset,
        file_name=f"{name}.json",
        content=json.dumps(entries).encode(),
        method=MethodInfo(name),
        metrics=["rouge_l"],
        is_public=is_public,
    )


@pytest.fixture
def make_user(django_user_model):
    def make(name: str, **extra):
        return django_user_model.objects.create_user(name, password=PASSWORD, **extra)

    return make


@pytest.fixture
def staff(make_user):
    return make_user("sam", is_staff=True)


@pytest.fixture
def owners(make_user):
    return make_user("ada"), make_user("bob")


@pytest.fixture
def submitted(demo_pictures, owners):
    """Two public submissions on the demo dataset (its pictures stored): Ada's and Bob's."""
    demo_dataset = demo_pictures
    ada, bob = owners
    return submit(ada, demo_dataset, "Careful"), submit(bob, demo_dataset, "Careless")


@pytest.fixture
def make_campaign(demo_dataset, staff, submitted):
    def make(slug: str = "live", *, systems=None, **extra) -> Campaign:
        systems = systems if systems is not None else [s.system for s in submitted]
        spec = CampaignSpec(slug=slug, title=slug.title(), dataset=demo_dataset, systems=systems, **extra)
        return campaign_create(spec=spec, created_by=staff)

    return make
