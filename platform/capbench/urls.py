"""Top-level URL routes.

Nothing under MEDIA_ROOT is served by path: submitted files are private, and a dataset's pictures
are served by id through catalog's media_file view, which checks the dataset's visibility."""

from django.contrib import admin
from django.urls import include, path

from accounts.lockout import limited_login
from api import ops

urlpatterns = [
    # The admin's sign-in form counts against the same attempt limits as the site's (accounts.lockout).
    # A route of its own, ahead of the admin's, rather than replacing admin.site.login: reloading this
    # module must not wrap it twice.
    path("admin/login/", limited_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("", include("catalog.urls")),
    path("", include("workbench.urls")),
    path("", include("leaderboards.urls")),
    path("", include("submissions.urls")),
    path("", include("campaigns.urls")),
    path("accounts/", include("accounts.urls")),
    path("api/v1/", include("api.urls")),
    path("ops/metrics", ops.metrics, name="ops-metrics"),  # Prometheus: staff or the operations token
    path("healthz", ops.health, name="health"),  # load balancers, container health checks
]
