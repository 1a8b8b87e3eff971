from django.urls import path

from catalog import views

app_name = "catalog"
urlpatterns = [
    path("", views.home, name="home"),
    path("datasets/", views.dataset_list, name="dataset-list"),
    path("datasets/<slug:slug>/", views.dataset_detail, name="dataset-detail"),
]
