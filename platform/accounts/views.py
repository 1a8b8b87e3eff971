"""Sign-up, sign-in (Django's view behind the attempt limits), password reset and the API token's
rotation."""

from __future__ import annotations

from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from accounts.forms import ResetRequestForm, SignUpForm
from accounts.lockout import limited_login
from accounts.services import AccountRefused, account_create
from capbench.http import AuthenticatedHttpRequest
from capbench.limits import limited

login_view = never_cache(limited_login(auth_views.LoginView.as_view(template_name="accounts/login.html")))


def safe_next(request: HttpRequest, fallback: str) -> str:
    """`?next=` when it points into this site (a path, or this host over the same scheme), else the fallback."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return fallback


@limited("signup", "sign-ups from this address")
def signup(request: HttpRequest) -> HttpResponse:
    form: SignUpForm = SignUpForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user: User = account_create(form=form)
        except AccountRefused as refusal:
            form.add_error(refusal.field, refusal.message)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            return redirect(safe_next(request, "/submissions/mine/"))
    return render(request, "accounts/signup.html", {"form": form, "next": safe_next(request, "")})


# Password reset: Django's views with our pages. Asking for a link is limited per address (429) and
# per e-mail address (ResetRequestForm: no more mail), and is answered with the same page whether
# or not an account has the address. The link works once, for PASSWORD_RESET_TIMEOUT.
password_reset = never_cache(
    limited("password_reset", "password-reset requests from this address")(
        auth_views.PasswordResetView.as_view(
            form_class=ResetRequestForm,
            template_name="accounts/password_reset.html",
            subject_template_name="emails/password_reset_subject.txt",
            email_template_name="emails/password_reset.txt",
            success_url=reverse_lazy("accounts:password_reset_done"),
        )
    )
)
password_reset_done = never_cache(
    auth_views.PasswordResetDoneView.as_view(template_name="accounts/password_reset_sent.html")
)
password_reset_confirm = never_cache(
    auth_views.PasswordResetConfirmView.as_view(
        template_name="accounts/password_reset_confirm.html",
        success_url=reverse_lazy("accounts:password_reset_complete"),
    )
)
password_reset_complete = never_cache(
    auth_views.PasswordResetCompleteView.as_view(template_name="accounts/password_reset_complete.html")
)


@never_cache
@login_required
@require_POST
@limited("tokens", "new API tokens", by="user")
def token_rotate(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A new API token (the old one stops working)."""
    Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    return redirect("submissions:mine")
