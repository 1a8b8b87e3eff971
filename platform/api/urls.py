from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from api import citations, views

app_name = "api"
router = DefaultRouter()
router.register("datasets", views.DatasetViewSet, basename="dataset")
router.register("systems", views.SystemViewSet, basename="system")
router.register("metrics", views.MetricViewSet, basename="metric")
router.register("scores", views.ScoreViewSet, basename="score")
router.register("correlations", views.CorrelationViewSet, basename="correlation")
router.register("submissions", views.SubmissionViewSet, basename="submission")
router.register("snapshots", views.CitableSnapshotViewSet, basename="snapshot")
router.register("metric-submissions", views.MetricSubmissionViewSet, basename="metric-submission")
router.register("campaigns", views.CampaignViewSet, basename="campaign")

urlpatterns = [
    path("", include(router.urls)),
    path("leaderboards/metrics/", views.MetricBoardView.as_view(), name="metric-board"),
    path("leaderboards/<slug:slug>/", views.LeaderboardView.as_view(), name="leaderboard"),
    path("auth/token/", views.TokenView.as_view(), name="token"),
    path("cite/", citations.CiteView.as_view(), name="cite"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's start-up script is served from ?script, not inline: the CSP allows no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]
