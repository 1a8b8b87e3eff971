from django.contrib.auth import views as auth_views
from django.urls import path
from django.views.decorators.cache import never_cache

from accounts import views

app_name = "accounts"
urlpatterns = [
    path("", views.account, name="account"),
    path("export/", views.data_export, name="export"),
    path("delete/", views.account_delete, name="delete"),
    path("deleted/", views.account_deleted, name="deleted"),
    path("signup/", never_cache(views.signup), name="signup"),
    path("signup/sent/", never_cache(views.signup_sent), name="signup_sent"),
    path("signup/confirm/<uidb64>/<token>/", never_cache(views.signup_confirm), name="signup_confirm"),
    path("login/", views.login_view, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("token/", views.token_rotate, name="token"),
    path("two-factor/", views.two_factor_enrol, name="two_factor_enrol"),
    path("two-factor/verify/", views.two_factor_verify, name="two_factor_verify"),
    path("password-reset/", views.password_reset, name="password_reset"),
    path("password-reset/sent/", views.password_reset_done, name="password_reset_done"),
    path("password-reset/complete/", views.password_reset_complete, name="password_reset_complete"),
    path("password-reset/<uidb64>/<token>/", views.password_reset_confirm, name="password_reset_confirm"),
]
