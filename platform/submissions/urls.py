from django.urls import path

from submissions import views

app_name = "submissions"
urlpatterns = [
    path("submit/", views.upload, name="upload"),
    path("submissions/mine/", views.mine, name="mine"),
    path("submissions/<int:pk>/", views.detail, name="detail"),
    path("submissions/<int:pk>/progress.json", views.progress, name="progress"),
    path("submissions/<int:pk>/scores.csv", views.scores_csv, name="scores-csv"),
    path("submissions/<int:pk>/visibility/", views.visibility, name="visibility"),
    path("submissions/<int:pk>/withdraw/", views.withdraw, name="withdraw"),
]
