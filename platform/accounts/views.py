"""Sign-up (confirmed by e-mail), sign-in (Django's view behind the attempt limits), password reset,
the API token's rotation, the account page (a download of one's data, deleting the account) and
staff two-factor sign-in. Each view parses, calls one service and renders."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST
from django_otp import login as otp_login
from rest_framework.authtoken.models import Token

from accounts.forms import AccountDeleteForm, CodeForm, PasswordCheckForm, ResetRequestForm, SignUpForm
from accounts.lockout import attempt_refusal, limited_login
from accounts.selectors import account_page
from accounts.services import closing, exports, two_factor
from accounts.services import signup as signups
from plumbing.http import AuthenticatedHttpRequest
from plumbing.limits import limited
from plumbing.refusals import FormPage

login_view = never_cache(limited_login(auth_views.LoginView.as_view(template_name="accounts/login.html")))
WRONG_CODE = "That code is not right, or was used already: give the one your app shows now."


def safe_next(request: HttpRequest, fallback: str) -> str:
    """`?next=` when it points into this site (a path, or this host over the same scheme), else the fallback."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    return _inside(request, target) or fallback


def _inside(request: HttpRequest, target: str) -> str:
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return ""


@limited("signup", "sign-ups from this address")
def signup(request: HttpRequest) -> HttpResponse:
    """Every valid form is answered with the same page, whether or not the address has an account
    (accounts.services.signup); a user name already taken is a form error (user names are public)."""
    form: SignUpForm = SignUpForm(request.POST or None)
    page = FormPage(
        request, "accounts/signup.html", {"form": form, "next": safe_next(request, "")}, form=form, status=200
    )
    if request.method == "POST" and form.is_valid():
        with page.refusals():  # AccountRefused: the form's error on its field
            signups.account_create(form=form, next_url=safe_next(request, ""))
            return redirect("accounts:signup_sent")
    return page.response()


def signup_sent(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/signup_sent.html")


def signup_confirm(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """The link in the confirmation mail: a page with one button (a mail scanner's GET confirms
    nothing), whose POST makes the account and leads to the sign-in form. A link that makes no
    account (LinkRefused) is a page saying why, answered 200 as the others are."""
    page = FormPage(request, "accounts/signup_confirm.html", status=200)
    with page.refusals():
        if request.method == "POST":
            user, next_url = signups.signup_confirm(uidb64=uidb64, token=token)
            messages.success(request, f"Your address is confirmed, {user.get_username()}: log in.")
            query = urlencode({"next": next_url}) if _inside(request, next_url) else ""
            return redirect(reverse("accounts:login") + (f"?{query}" if query else ""))
        page.context["username"] = signups.pending_signup(uidb64, token).username
    return page.response()


# Password reset: Django's views with our pages. Asking for a link is limited per address (429) and
# per e-mail address (ResetRequestForm: no more mail), and is answered with the same page whether
# or not an account has the address. The link works once, for PASSWORD_RESET_TIMEOUT; the new
# password revokes the account's API tokens and ends its other sessions (services.credentials).
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


@never_cache
@login_required
def account(request: AuthenticatedHttpRequest, export_form: PasswordCheckForm | None = None) -> HttpResponse:
    form = export_form or PasswordCheckForm(request.user)
    return render(request, "accounts/account.html", {"page": account_page(user=request.user), "form": form})


@never_cache
@login_required
@require_POST
@limited("account_data", "downloads of your data and account deletions", by="user")
def data_export(request: AuthenticatedHttpRequest) -> HttpResponseBase:
    """Everything CapBench holds about the signed-in person, as a zip (accounts.services.exports)."""
    form = PasswordCheckForm(request.user, request.POST)
    if not form.is_valid():
        return account(request, export_form=form)
    archive = exports.account_export(user=request.user)
    return FileResponse(archive.file, as_attachment=True, filename=archive.name, content_type="application/zip")


@never_cache
@login_required
@limited("account_data", "downloads of your data and account deletions", by="user")
def account_delete(request: AuthenticatedHttpRequest) -> HttpResponse:
    page = account_page(user=request.user)
    form = AccountDeleteForm(request.user, request.POST or None)
    shown = FormPage(request, "accounts/delete.html", {"page": page, "form": form}, form=form, status=200)
    if request.method == "POST" and form.is_valid():
        with shown.refusals():  # ClosingRefused: the form's error, saying why
            closing.account_delete(user=request.user, keep_public=form.keep_public)
            logout(request)
            return redirect("accounts:deleted")
    return shown.response()


def account_deleted(request: HttpRequest) -> HttpResponse:
    return render(request, "accounts/deleted.html")


@never_cache
@login_required
def two_factor_enrol(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Staff only: a new secret to add to an authenticator app, confirmed with a code it shows. With
    a device already enrolled, only a session verified with it may enrol another (which replaces it)."""
    user = request.user
    if not user.is_staff:
        raise Http404
    if two_factor.confirmed_device(user) is not None and not two_factor.is_verified(user):
        return redirect(reverse("accounts:two_factor_verify") + "?" + urlencode({"next": request.path}))
    form = CodeForm(request.POST or None)
    if request.method == "POST":
        refusal = attempt_refusal(request, user.get_username())
        if refusal is not None:
            return refusal
        if form.is_valid():
            device = two_factor.enrolment_confirm(user=user, code=form.cleaned_data["code"])
            if device is not None:
                otp_login(request, device)
                messages.success(request, "Two-factor sign-in is on for your account.")
                return redirect("accounts:account")
            form.add_error("code", WRONG_CODE)
    device = two_factor.enrolment_device(user=user)
    context = {
        "form": form,
        "secret": two_factor.secret_text(device),
        "uri": device.config_url,
        "enrolled": two_factor.confirmed_device(user) is not None,
    }
    return render(request, "accounts/two_factor_enrol.html", context)


@never_cache
@login_required
def two_factor_verify(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The code page a staff session is sent to (accounts.middleware), limited like sign-in attempts."""
    user = request.user
    device = two_factor.confirmed_device(user)
    next_url = safe_next(request, reverse("accounts:account"))
    form = CodeForm(request.POST or None)
    if request.method == "POST" and device is not None:
        refusal = attempt_refusal(request, user.get_username())
        if refusal is not None:
            return refusal
        if form.is_valid():
            verified = two_factor.code_verify(user=user, code=form.cleaned_data["code"])
            if verified is not None:
                otp_login(request, verified)
                return redirect(next_url)
            form.add_error("code", WRONG_CODE)
    context = {"form": form, "device": device, "next": next_url, "staff": user.is_staff}
    return render(request, "accounts/two_factor_verify.html", context)
