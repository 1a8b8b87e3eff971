from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Submissions"
    default_auto_field = "django.db.models.BigAutoField"
