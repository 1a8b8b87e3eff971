"""Who an annotator is, as far as a campaign needs to know: a pseudonym per campaign (what exports
and judgments carry), and the accounts taken for the same person (the sock-puppet rule)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from campaigns.models import AccountAddress, Campaign


def _keyed(*parts: object) -> str:
    message = "\x1f".join(str(part) for part in parts).encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def pseudonym(campaign: Campaign, user_id: int) -> str:
    """The annotator's name in one campaign's judgments and exports: stable within the campaign,
    unlinkable across campaigns and to the account without the server's secret key."""
    return f"annotator-{_keyed('campaign', campaign.pk, user_id)[:12]}"


def address_seen(*, user_id: int, address: str) -> None:
    """Remember that the account was used from `address` (a keyed digest of it, never the address).
    A request whose address cannot be read (capbench.limits.client_address gives "unknown") shares it
    with no one: recorded, it would link every such account to every other."""
    if not address or address == "unknown":
        return
    AccountAddress.objects.update_or_create(
        user_id=user_id, digest=_keyed("address", address), defaults={"last_seen": timezone.now()}
    )


def linked_accounts(user_id: int) -> set[int]:
    """The account and every account seen at one of its addresses within the last
    CAPBENCH_LINKED_ADDRESS_DAYS days: taken for one person, none may rate the others' captions."""
    since = timezone.now() - timedelta(days=settings.CAPBENCH_LINKED_ADDRESS_DAYS)
    digests = AccountAddress.objects.filter(user_id=user_id, last_seen__gte=since).values("digest")
    linked = AccountAddress.objects.filter(Q(digest__in=digests), last_seen__gte=since).values_list(
        "user_id", flat=True
    )
    return {user_id, *linked}
