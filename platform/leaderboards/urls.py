from django.urls import path

from leaderboards import citable_views, views

app_name = "leaderboards"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/<slug:slug>/leaderboard/", views.captioner_board, name="captioner"),
    path("datasets/<slug:slug>/leaderboard/snapshots/", citable_views.snapshot_list, name="snapshots"),
    path("datasets/<slug:slug>/leaderboard/snapshots/latest/", citable_views.snapshot_latest, name="snapshot-latest"),
    path("datasets/<slug:slug>/leaderboard/snapshots/freeze/", citable_views.snapshot_freeze_view, name="freeze"),
    path("datasets/<slug:slug>/leaderboard/snapshots/<int:number>/", citable_views.snapshot_detail, name="snapshot"),
    path(
        "datasets/<slug:slug>/leaderboard/snapshots/<int:number>.json",
        citable_views.snapshot_json,
        name="snapshot-json",
    ),
    path(
        "datasets/<slug:slug>/leaderboard/snapshots/<int:number>.csv",
        citable_views.snapshot_csv_download,
        name="snapshot-csv",
    ),
    path("datasets/<slug:slug>/items/<int:pk>/", views.item_detail, name="item"),
    path("datasets/<slug:slug>/systems/<slug:system>/", views.system_detail, name="system"),
    path("datasets/<slug:slug>/systems/<slug:system>/badge.svg", views.system_badge, name="badge-headline"),
    path("datasets/<slug:slug>/systems/<slug:system>/badge/<slug:metric>.svg", views.system_badge, name="badge"),
    path("datasets/<slug:slug>/compare/", views.compare, name="compare"),
    path("generated/<str:key>.png", views.generated_picture, name="generated"),
    path("metrics/", views.metric_board, name="metrics"),
    path("metrics/all/", views.metric_index, name="metric-index"),  # before the slug route: "all" is no metric
    # Before the slug route too: "snapshots" is no metric.
    path("metrics/snapshots/", citable_views.snapshot_list, name="metric-snapshots"),
    path("metrics/snapshots/latest/", citable_views.snapshot_latest, name="metric-snapshot-latest"),
    path("metrics/snapshots/freeze/", citable_views.snapshot_freeze_view, name="metric-freeze"),
    path("metrics/snapshots/<int:number>/", citable_views.snapshot_detail, name="metric-snapshot"),
    path("metrics/snapshots/<int:number>.json", citable_views.snapshot_json, name="metric-snapshot-json"),
    path("metrics/snapshots/<int:number>.csv", citable_views.snapshot_csv_download, name="metric-snapshot-csv"),
    path("metrics/<slug:slug>/", views.metric_detail, name="metric-detail"),
    path("metrics/<slug:slug>/disagreements/", views.metric_disagreements, name="metric-disagreements"),
    path("metrics/<slug:slug>/cite.bib", views.metric_cite_bib, name="metric-cite-bib"),
    path("datasets/<slug:slug>/significance/", views.significance_detail, name="significance"),
]
