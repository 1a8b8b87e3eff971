"""Campaign fixtures: two public submissions on the demo dataset (each its own owner), staff, and a
campaign made through the real service."""

from __future__ import annotations

import pytest

from campaigns.models import Campaign
from campaigns.services.creation import CampaignSpec, campaign_create
from tests.platform.factories import UserFactory, submit


@pytest.fixture
def make_user():
    """`make_user("ada", is_staff=True)`: an account that signs in with factories.PASSWORD."""

    def make(name: str, **extra):
        return UserFactory(username=name, **extra)

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
