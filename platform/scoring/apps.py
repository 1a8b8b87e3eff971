from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: the handlers import models, which the app registry loads first.
        from scoring import signals  # noqa: F401  (worker start-up recovery)
