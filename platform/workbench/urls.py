from django.urls import path

from catalog.uploads import views as uploads
from workbench import views
from workbench.services import METRICS

app_name = "workbench"
urlpatterns = [
    path("submit/metric/", views.submit, name="submit"),
    path("metric-submissions/mine/", views.mine, name="mine"),
    path("metric-submissions/<int:pk>/visibility/", uploads.visibility, {"kind": METRICS}, name="visibility"),
    path("metric-submissions/<int:pk>/withdraw/", uploads.withdraw, {"kind": METRICS}, name="withdraw"),
]
