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
    path("password-reset/", views.password_reset, name="password_reset"),
    path("password-reset/sent/", views.password_reset_done, name="password_reset_done"),
    path("password-reset/complete/", views.password_reset_complete, name="password_reset_complete"),
    path("password-reset/<uidb64>/<token>/", views.password_reset_confirm, name="password_reset_confirm"),
]
