"""What a new password revokes: every API token of the account. Its other sessions end by
themselves (Django keeps a digest of the password hash in each session and drops one that no longer
matches), so after a reset or a change, whoever held the old password, a session or a token is out.

Called by accounts.signals for every save that sets a password, whichever way it was set: the reset
link, the admin's password form, `manage.py changepassword`."""

from __future__ import annotations

import logging

from rest_framework.authtoken.models import Token

log = logging.getLogger(__name__)


def tokens_revoke(*, user_id: int) -> int:
    """Delete the account's API tokens; how many there were."""
    deleted, _ = Token.objects.filter(user_id=user_id).delete()
    if deleted:
        log.info("user %s: the password changed, its API token was revoked", user_id)
    return deleted
