"""The API's one exception handler (api/errors.py): a service's refusal is answered with its status,
the body the API has always given ({"detail": …}, problems under their field, retry_after, a
duplicate's links) and Retry-After; anything else as DRF answers it. Every domain refusal is one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone
from rest_framework.exceptions import NotFound as DrfNotFound
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from accounts.services.closing import ClosingRefused
from accounts.services.signup import BROKEN, AccountRefused, LinkRefused
from api.errors import exception_handler
from campaigns.rubrics import RubricError
from campaigns.services.answers import AnswerRefused
from campaigns.services.assignment import NotAllowed
from campaigns.services.creation import CampaignRefused
from catalog.fetching.errors import FetchError
from catalog.importers.errors import ImportFormatError
from catalog.services.references import HidingRefused
from leaderboards.citable import FreezeRefused
from leaderboards.comparison import SystemsNotComparable
from leaderboards.metric_board import UnknownFamily, UnknownProtocol, UnknownSort
from leaderboards.significance import NoSuchColumn
from plumbing.errors import ApplicationError
from plumbing.limits import LimitsUnavailable
from submissions.formats import SubmissionFileError
from submissions.services import DuplicateSubmission, QuotaExceeded, SubmissionRefused
from workbench.services import MetricRefused, ScoresRefused


def answer(error: Exception):
    request = APIRequestFactory().post("/api/v1/submissions/")
    return exception_handler(error, {"request": request, "view": None})


def test_a_files_problems_are_listed_under_its_field_each_after_the_file():
    response = answer(SubmissionFileError("results.jsonl", ["line 2, field 'caption': empty"], more=3))
    assert response.status_code == 400
    assert response.data == {"results": ["results.jsonl: line 2, field 'caption': empty", "… and 3 more problem(s)"]}
    scores = answer(ScoresRefused([SubmissionFileError("s.csv (demo)", ["line 4: no score"], more=1)]))
    assert scores.data == {"scores": ["s.csv (demo): line 4: no score", "s.csv (demo): … and 1 more problem(s)"]}


def test_a_refusal_without_problems_is_its_detail():
    response = answer(SubmissionRefused("field 'method name': required"))
    assert (response.status_code, response.data) == (400, {"detail": "field 'method name': required"})
    assert not response.has_header("Retry-After")
    staff = answer(ImportFormatError("upload.jsonl", 3, "image", "missing"))
    assert staff.data == {"file": "upload.jsonl, line 3: field 'image': missing"}


def test_a_full_quota_is_429_with_retry_after_and_when():
    retry_at = timezone.now() + timedelta(hours=1)
    response = answer(QuotaExceeded("You have submitted 5 times today.", retry_at))
    assert response.status_code == 429
    assert 3590 < int(response["Retry-After"]) <= 3601
    assert response.data == {
        "detail": "You have submitted 5 times today.",
        "retry_after": int(response["Retry-After"]),
        "retry_at": retry_at.isoformat(),
    }
    concurrent = answer(QuotaExceeded("3 submissions are being scored."))
    assert concurrent["Retry-After"] == "60"
    assert "retry_at" not in concurrent.data


def test_a_duplicate_is_409_with_the_earlier_submissions_links():
    existing = SimpleNamespace(
        pk=7, dataset=SimpleNamespace(slug="demo"), created_at=datetime(2025, 3, 1, 9, 30, tzinfo=UTC)
    )
    response = answer(DuplicateSubmission(existing))
    assert response.status_code == 409
    assert response.data == {
        "detail": "you submitted this very file for demo at 2025-03-01 09:30 UTC: it is submission 7",
        "submission": 7,
        "url": "http://testserver/api/v1/submissions/7/",
        "page": "http://testserver/submissions/7/",
    }


def test_anything_else_is_answered_as_drf_answers_it():
    response = answer(DrfNotFound("no such thing"))
    assert (response.status_code, response.data) == (404, {"detail": "no such thing"})
    assert answer(ValueError("a bug")) is None  # DRF re-raises it: a 500, as before


class Refusing(APIView):
    authentication_classes: list = []
    permission_classes: list = []
    throttle_classes: list = []

    def get(self, request):
        if request.query_params.get("refuse"):
            raise LimitsUnavailable(30)
        return Response({"ok": True})


def test_the_handler_is_the_apis_own():
    view = Refusing.as_view()
    assert view(APIRequestFactory().get("/api/v1/x/")).status_code == 200
    refused = view(APIRequestFactory().get("/api/v1/x/", {"refuse": "1"}))
    assert refused.status_code == 503
    assert refused["Retry-After"] == "30"
    assert refused.data["retry_after"] == 30
    assert "cannot be checked right now" in refused.data["detail"]


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (SubmissionRefused("x"), 400),
        (SubmissionFileError("f", ["x"]), 400),
        (MetricRefused("x"), 400),
        (ScoresRefused([]), 400),
        (ImportFormatError("f", None, None, "x"), 400),
        (HidingRefused("x"), 400),
        (RubricError("x"), 400),
        (CampaignRefused({"slug": "taken"}), 400),
        (AnswerRefused({"winner": "left or right"}), 400),
        (AccountRefused("username", "taken"), 400),
        (LinkRefused(BROKEN), 400),
        (SystemsNotComparable("x"), 400),
        (UnknownSort("x"), 400),
        (FreezeRefused("x"), 400),
        (NotAllowed("this campaign is closed"), 403),
        (ClosingRefused("x"), 403),
        (UnknownProtocol("x"), 404),
        (UnknownFamily("x"), 404),
        (NoSuchColumn(), 404),
        (QuotaExceeded("x"), 429),
        (FetchError("x"), 502),
        (LimitsUnavailable(5), 503),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_every_domain_refusal_is_an_application_error_with_its_status(error, status):
    assert isinstance(error, ApplicationError)
    assert answer(error).status_code == status
