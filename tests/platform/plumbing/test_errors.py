"""One refusal, answered one way on a page (plumbing/errors.py, plumbing/refusals.py): its status,
its words, its problems with their places and its Retry-After."""

from __future__ import annotations

import json

import pytest
from django import forms
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages import get_messages
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import Http404, HttpResponse
from django.test import RequestFactory

from plumbing.errors import ApplicationError, NotFound, Problem, TooManyRequests
from plumbing.limits import Decision, LimitsUnavailable, refusal
from plumbing.refusals import FormPage, RefusalMiddleware, refusal_noted

PAGE = "{% for problem in problems %}[{{ problem }}]{% endfor %}|{{ form.non_field_errors }}{{ form.name.errors }}"


@pytest.fixture
def page_template(settings):
    """A page that shows its problems and its form's errors, and nothing else."""
    settings.TEMPLATES = [
        {
            "BACKEND": "django.template.backends.django.DjangoTemplates",
            "OPTIONS": {"loaders": [("django.template.loaders.locmem.Loader", {"page.html": PAGE})]},
        }
    ]
    return "page.html"


class NameForm(forms.Form):
    name = forms.CharField()


def post(path: str = "/submit/"):
    request = RequestFactory().post(path)
    request.user = AnonymousUser()
    request._messages = CookieStorage(request)
    return request


def test_a_refusal_says_its_problems_with_their_places_and_its_api_body():
    error = ApplicationError("2 problems", located=[Problem("missing", where="line 3"), Problem("… and 1 more")])
    assert error.status == 400
    assert str(error) == "2 problems"
    assert error.lines() == ["line 3: missing", "… and 1 more"]
    assert error.reasons() == "missing; … and 1 more"
    assert error.body() == {"detail": ["line 3: missing", "… and 1 more"]}
    plain = ApplicationError("no", extra={"id": 4}, links={"page": "/x/4/"})
    assert plain.lines() == ["no"]
    assert plain.body(lambda path: "http://site" + path) == {"detail": "no", "id": 4, "page": "http://site/x/4/"}
    assert TooManyRequests("slow down", retry_after=30).body() == {"detail": "slow down", "retry_after": 30}


def test_the_limits_refuse_with_the_same_errors():
    limited = refusal(Decision(allowed=False, retry_after=120), "uploads")
    assert (limited.status, str(limited), limited.retry_after) == (
        429,
        "Too many uploads. Try again in 2 minutes.",
        120,
    )
    down = refusal(Decision(allowed=False, retry_after=30, unavailable=True), "uploads")
    assert isinstance(down, LimitsUnavailable)
    assert (down.status, down.retry_after) == (503, 30)
    assert "cannot be checked right now" in str(down)


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_form_page_without_a_refusal_answers_200_or_400_after_a_post(page_template, method):
    request = getattr(RequestFactory(), method)("/submit/")
    page = FormPage(request, page_template)
    with page.refusals():
        pass
    response = page.response()
    assert response.status_code == (400 if method == "post" else 200)
    assert not response.has_header("Retry-After")


def test_a_form_page_shows_a_refusal_with_its_status_and_retry_after(page_template):
    page = FormPage(post(), page_template)
    with page.refusals():
        raise TooManyRequests("Too many uploads today.", retry_after=90)
    response = page.response()
    assert response.status_code == 429
    assert response["Retry-After"] == "90"
    assert response.content.decode().startswith("[Too many uploads today.]|")


def test_a_form_page_returns_what_the_block_returns_when_nothing_is_refused(page_template):
    def view(request):
        page = FormPage(request, page_template)
        with page.refusals():
            return HttpResponse("stored", status=201)
        return page.response()

    assert view(post()).status_code == 201


def test_a_refusal_on_a_form_page_with_a_form_lands_on_the_form(page_template):
    form = NameForm({"name": "ada"})
    assert form.is_valid()
    page = FormPage(post(), page_template, {"form": form}, form=form, status=200)
    with page.refusals():
        raise ApplicationError("taken", located=[Problem("That name is taken.", where="name")])
    response = page.response()
    assert response.status_code == 200  # the page's own status, fixed
    assert form.errors == {"name": ["That name is taken."]}
    assert "That name is taken." in response.content.decode()
    other = NameForm({"name": "bob"})
    assert other.is_valid()
    page = FormPage(post(), page_template, {"form": other}, form=other)
    with page.refusals():
        raise ApplicationError("Staff accounts are closed in the admin.")
    assert other.non_field_errors() == ["Staff accounts are closed in the admin."]
    assert page.response().status_code == 400


def test_a_noted_refusal_becomes_the_next_pages_error_message():
    request = post()
    with refusal_noted(request, before="The campaign stays closed: ", after="."):
        raise ApplicationError("status: no pictures", located=[Problem("no item has a picture", where="status")])
    with refusal_noted(request):
        pass  # nothing refused: nothing said
    assert [str(message) for message in get_messages(request)] == ["The campaign stays closed: no item has a picture."]
    with pytest.raises(ValueError), refusal_noted(request):
        raise ValueError("not a refusal: a bug, left to the 500 handler")


def test_an_unexpected_refusal_gets_its_status_as_a_page_or_as_json_under_the_api():
    middleware = RefusalMiddleware(lambda request: HttpResponse())
    page = middleware.process_exception(post("/campaigns/x/"), TooManyRequests("Too many answers.", retry_after=5))
    assert page is not None
    assert page.status_code == 429
    assert page["Retry-After"] == "5"
    assert "Too many answers." in page.content.decode()
    api = middleware.process_exception(post("/api/v1/x/"), ApplicationError("no", links={"page": "/x/"}))
    assert api is not None
    assert api.status_code == 400
    assert json.loads(api.content) == {"detail": "no", "page": "http://testserver/x/"}
    assert middleware.process_exception(post(), ValueError("a bug")) is None
    with pytest.raises(Http404):
        middleware.process_exception(post(), NotFound("no such dataset"))
