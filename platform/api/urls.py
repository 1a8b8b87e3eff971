from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from api import citations
from api.documentation.view import SchemaView
from api.views import auth, boards, campaigns, catalog, metric_submissions, scores, snapshots, submissions

app_name = "api"
router = DefaultRouter()
router.register("datasets", catalog.DatasetViewSet, basename="dataset")
router.register("systems", catalog.SystemViewSet, basename="system")
router.register("metrics", catalog.MetricViewSet, basename="metric")
router.register("scores", scores.ScoreViewSet, basename="score")
router.register("correlations", scores.CorrelationViewSet, basename="correlation")
router.register("submissions", submissions.SubmissionViewSet, basename="submission")
router.register("snapshots", snapshots.CitableSnapshotViewSet, basename="snapshot")
router.register("metric-submissions", metric_submissions.MetricSubmissionViewSet, basename="metric-submission")
router.register("campaigns", campaigns.CampaignViewSet, basename="campaign")

urlpatterns = [
    path("", include(router.urls)),
    path("leaderboards/metrics/", boards.MetricBoardView.as_view(), name="metric-board"),
    path("leaderboards/<slug:slug>/", boards.LeaderboardView.as_view(), name="leaderboard"),
    path("leaderboards/<slug:slug>/compare/", boards.CompareView.as_view(), name="compare"),
    path("auth/token/", auth.TokenView.as_view(), name="token"),
    path("cite/", citations.CiteView.as_view(), name="cite"),
    path("schema/", SchemaView.as_view(), name="schema"),
    # Swagger UI's start-up script is served from ?script, not inline: the CSP allows no inline script.
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]
