from django.urls import path

from leaderboards import views

app_name = "leaderboards"
urlpatterns = [
    path("datasets/<slug:slug>/leaderboard/", views.captioner_board, name="captioner"),
    path("metrics/", views.metric_board, name="metrics"),
    path("metrics/<slug:slug>/", views.metric_detail, name="metric-detail"),
    path("datasets/<slug:slug>/significance/", views.significance_detail, name="significance"),
]
