"""Connected in AccountsConfig.ready(): a saved user whose password was set revokes its API tokens
(accounts.services.credentials)."""

from __future__ import annotations

from accounts.services.credentials import tokens_revoke


def password_loaded(sender, instance, **kwargs) -> None:
    """Remember the hash a user was loaded with (none when the field was deferred)."""
    instance._loaded_password = instance.__dict__.get("password")


def password_saved(sender, instance, created: bool, update_fields=None, **kwargs) -> None:
    """Django's user keeps the raw password in `_password` from `set_password` until the save that
    follows it, and clears it before saving a mere hash upgrade (AbstractBaseUser.check_password:
    "hash upgrades shouldn't be considered password changes"), so it marks a new password exactly.
    A password made unusable (an account disabled in the admin) revokes them too, on the save that
    changes the stored hash, never on a later save that leaves it (a sign-in's `last_login`)."""
    loaded = getattr(instance, "_loaded_password", None)
    instance._loaded_password = instance.__dict__.get("password")
    if created:
        return
    if getattr(instance, "_password", None) is not None:
        tokens_revoke(user_id=instance.pk)
        return
    if update_fields is not None and "password" not in update_fields:
        return
    if "password" in instance.__dict__ and instance.password != loaded and not instance.has_usable_password():
        tokens_revoke(user_id=instance.pk)
