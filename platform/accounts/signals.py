"""Connected in AccountsConfig.ready(): a saved user whose password was set revokes its API tokens
(accounts.services.credentials)."""

from __future__ import annotations

from accounts.services.credentials import tokens_revoke


def password_saved(sender, instance, created: bool, **kwargs) -> None:
    """Django's user keeps the raw password in `_password` from `set_password` until the save that
    follows it, and clears it before saving a mere hash upgrade (AbstractBaseUser.check_password:
    "hash upgrades shouldn't be considered password changes"), so it marks a new password exactly.
    An unusable password (an account disabled in the admin) revokes them too."""
    if created:
        return
    if getattr(instance, "_password", None) is not None or not instance.has_usable_password():
        tokens_revoke(user_id=instance.pk)
