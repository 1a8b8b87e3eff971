from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    verbose_name = "Live human evaluation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Hooked up here so that importing the models never connects a handler twice.
        from campaigns import signals  # noqa: F401
