from django.urls import path

from campaigns import views

app_name = "campaigns"
urlpatterns = [
    path("campaigns/", views.campaign_list, name="list"),
    path("campaigns/new/", views.campaign_new, name="new"),
    path("campaigns/<slug:slug>/", views.campaign_detail, name="detail"),
    path("campaigns/<slug:slug>/annotate/", views.annotate, name="annotate"),
    path("campaigns/<slug:slug>/annotate/picture/<str:token>/", views.task_picture, name="task-picture"),
    path("campaigns/<slug:slug>/status/", views.campaign_status, name="status"),
    path("campaigns/<slug:slug>/board/", views.campaign_board, name="board"),
    path("campaigns/<slug:slug>/export.jsonl", views.campaign_export, name="export"),
]
