from django.apps import AppConfig


class WorkbenchConfig(AppConfig):
    name = "workbench"
    verbose_name = "Metric workbench"
    default_auto_field = "django.db.models.BigAutoField"
