from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.decorators.cache import never_cache

from accounts import views

app_name = "accounts"
urlpatterns = [
    path("signup/", never_cache(views.signup), name="signup"),
    path("login/", views.login_view, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("token/", views.token_rotate, name="token"),
]
