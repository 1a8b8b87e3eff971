from django.urls import path

from catalog import views

app_name = "catalog"
urlpatterns = [
    path("datasets/", views.dataset_list, name="dataset-list"),
    path("datasets/<slug:slug>/", views.dataset_detail, name="dataset-detail"),
    path("datasets/<slug:slug>/items/", views.item_browser, name="item-browser"),
    path("datasets/<slug:slug>/download.jsonl", views.dataset_download, name="dataset-download"),
    path("datasets/<slug:slug>/cite.bib", views.dataset_cite_bib, name="dataset-cite-bib"),
    path(
        "datasets/<slug:slug>/candidates.jsonl",
        views.dataset_candidates,
        {"format": "jsonl"},
        name="dataset-candidates-jsonl",
    ),
    path(
        "datasets/<slug:slug>/candidates.csv",
        views.dataset_candidates,
        {"format": "csv"},
        name="dataset-candidates-csv",
    ),
    path("media-files/<int:pk>/", views.media_file, name="media-file"),
    path("cite/", views.cite, name="cite"),
    path("cite.bib", views.cite_bib, name="cite-bib"),
]
