"""A URLconf whose one view fails: what an unexpected server error looks like in the logs."""

from django.http import HttpRequest, HttpResponse
from django.urls import path


def broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a view")


urlpatterns = [path("broken/", broken)]
