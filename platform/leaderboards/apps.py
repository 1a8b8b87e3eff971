from django.apps import AppConfig


class LeaderboardsConfig(AppConfig):
    name = "leaderboards"
    verbose_name = "Leaderboards"

    def ready(self) -> None:
        from leaderboards import signals  # noqa: F401  (snapshots follow jobs and submissions)
