"""Campaigns follow sign-ins (the addresses behind the sock-puppet rule) and submissions whose
visibility changed (a campaign's results count only captions everyone may see)."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from campaigns.models import Campaign
from campaigns.services.identity import address_seen
from campaigns.services.refresh import refresh_soon
from plumbing.limits import client_address
from submissions.events import submission_changed


@receiver(user_logged_in, dispatch_uid="campaigns-address-seen")
def remember_address(sender, request, user, **kwargs) -> None:
    if request is not None:
        address_seen(user_id=user.pk, address=client_address(request))


@receiver(submission_changed, dispatch_uid="campaigns-submission-changed")
def refresh_campaigns_of(sender, **kwargs) -> None:
    dataset_id = kwargs.get("dataset_id")
    if dataset_id is None:
        return
    for campaign in Campaign.objects.filter(dataset_id=dataset_id):
        refresh_soon(campaign)
