from django.urls import path

from leaderboards import views

app_name = "leaderboards"
urlpatterns = [
    path("datasets/<slug:slug>/leaderboard/", views.captioner_board, name="captioner"),
    path("datasets/<slug:slug>/items/<int:pk>/", views.item_detail, name="item"),
    path("datasets/<slug:slug>/systems/<slug:system>/", views.system_detail, name="system"),
    path("datasets/<slug:slug>/compare/", views.compare, name="compare"),
    path("generated/<str:key>.png", views.generated_picture, name="generated"),
    path("metrics/", views.metric_board, name="metrics"),
    path("metrics/all/", views.metric_index, name="metric-index"),  # before the slug route: "all" is no metric
    path("metrics/<slug:slug>/", views.metric_detail, name="metric-detail"),
    path("metrics/<slug:slug>/disagreements/", views.metric_disagreements, name="metric-disagreements"),
    path("datasets/<slug:slug>/significance/", views.significance_detail, name="significance"),
]
