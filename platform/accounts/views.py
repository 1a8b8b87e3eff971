"""Sign-up (login and logout are Django's own views)."""
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token
from django.contrib.auth.forms import UserCreationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render


def signup(request: HttpRequest) -> HttpResponse:
    form = UserCreationForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect(request.GET.get("next") or "submissions:mine")
    return render(request, "accounts/signup.html", {"form": form})


@login_required
@require_POST
def token_rotate(request: HttpRequest) -> HttpResponse:
    """A new API token (the old one stops working)."""
    Token.objects.filter(user=request.user).delete()
    Token.objects.create(user=request.user)
    return redirect("submissions:mine")
