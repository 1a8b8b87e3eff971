from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Here, not at the top: the handlers import models, which the app registry loads first.
        from submissions import signals  # noqa: F401  (a submission's status follows its jobs)
