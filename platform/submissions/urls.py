from django.urls import path

from catalog.uploads import views as uploads
from submissions import views
from submissions.services import SUBMISSIONS

app_name = "submissions"
urlpatterns = [
    path("submit/", views.upload, name="upload"),
    path("submissions/mine/", views.mine, name="mine"),
    path("submissions/<int:pk>/", views.detail, name="detail"),
    path("submissions/<int:pk>/progress.json", views.progress, name="progress"),
    path("submissions/<int:pk>/scores.csv", views.scores_csv, name="scores-csv"),
    path("submissions/<int:pk>/visibility/", uploads.visibility, {"kind": SUBMISSIONS}, name="visibility"),
    path("submissions/<int:pk>/withdraw/", uploads.withdraw, {"kind": SUBMISSIONS}, name="withdraw"),
]
