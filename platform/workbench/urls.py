from django.urls import path

from workbench import views

app_name = "workbench"
urlpatterns = [
    path("submit/metric/", views.submit, name="submit"),
    path("metric-submissions/mine/", views.mine, name="mine"),
    path("metric-submissions/<int:pk>/visibility/", views.visibility, name="visibility"),
    path("metric-submissions/<int:pk>/withdraw/", views.withdraw, name="withdraw"),
]
