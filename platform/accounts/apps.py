from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        # Here, not at the top: the user model exists only once the apps are loaded.
        from django.contrib.auth import get_user_model
        from django.db.models.signals import post_init, post_save

        from accounts.signals import password_loaded, password_saved

        post_init.connect(password_loaded, sender=get_user_model(), dispatch_uid="accounts.password_loaded")
        post_save.connect(password_saved, sender=get_user_model(), dispatch_uid="accounts.password_saved")
