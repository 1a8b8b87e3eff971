from django.apps import AppConfig


class LeaderboardsConfig(AppConfig):
    name = "leaderboards"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        # Here, not at the top: the handlers import models, which the app registry loads first.
        from leaderboards import signals  # noqa: F401  (snapshots follow jobs and submissions)
