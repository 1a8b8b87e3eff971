from django.apps import AppConfig


class ScoringConfig(AppConfig):
    name = "scoring"
    verbose_name = "Scoring"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from scoring import signals  # noqa: F401  (worker start-up recovery)
